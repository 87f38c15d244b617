"""The code under test out of process (docs/threat_model.md, "a verdict the code under test
cannot write"). Shipped into the sandbox as source with the launcher (bench/trial/launcher.py),
which runs each part of a check as two processes:

- the *server*, as the agent's uid: the only process that runs code of the agent's. It imports
  the modules it is asked for and answers requests (`getattr`, `call`, `iter`, `repr`, ...)
  with data: JSON of exact builtin values (str, int, float, bool, None, and list, tuple, dict,
  set of them); any other value stays in the server and is sent as a reference.
- the *comparer*, as a third uid (neither the agent's nor the judge's): it runs the part itself
  (the shipped runner, pytest, a check tool, an import probe), whose files are the harness's own
  protected copy, with every module of the agent's replaced by a proxy that sends each use to
  the server. Every assertion, every comparison and so the verdict are computed here, from data:
  never the agent's `__eq__`, never a message of the agent's process about itself.

No code of the agent's runs in the comparer (comparer.py says how). What the server says is an
answer to one request, decoded strictly; it may be wrong (that is the code under test failing),
never a verdict.
"""

import builtins
import json
import os
import shutil
import sys
import traceback

LIMIT = 32 << 20  # bytes of one answer: more is the agent's, and the request fails
_TAGS = ("$t", "$d", "$s", "$fs", "$b", "$r")
_TAG: dict = {tuple: "$t", set: "$s", frozenset: "$fs"}  # of the containers with no JSON form
_MAKE: dict = {"$t": tuple, "$s": set, "$fs": frozenset}


def _write(fd, obj):
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


# --- the server: the agent's uid, the agent's code ---------------------------------------------
def serve(fd, tree, home=None):
    """Answer requests on `fd` until it closes (then remove `home`, its HOME, and exit 0: the
    judge never becomes the agent's uid to remove it). Runs the code under test."""
    refs: dict = {}
    ids: dict = {}
    sys.path.insert(0, tree)

    def enc(x, depth=0):
        t = type(x)
        if t in (str, int, float, bool) or x is None:
            return x
        if depth < 100:
            if t is list:
                return [enc(v, depth + 1) for v in x]
            if t in (tuple, set, frozenset):
                return {_TAG[t]: [enc(v, depth + 1) for v in x]}
            if t is dict:
                return {"$d": [[enc(k, depth + 1), enc(v, depth + 1)] for k, v in x.items()]}
            if t is bytes:
                return {"$b": x.decode("latin-1")}
        if id(x) not in ids:
            ids[id(x)] = len(refs)
            refs[len(refs)] = x
        return {"$r": [ids[id(x)], t.__name__, hasattr(x, "__path__")]}

    def dec(x):
        if isinstance(x, list):
            return [dec(v) for v in x]
        if isinstance(x, dict):
            ((tag, v),) = x.items()
            if tag == "$r":
                return refs[v]
            return _MAKE[tag](dec(i) for i in v) if tag != "$d" else {dec(k): dec(w) for k, w in v}
        return x

    ops: dict = {
        "import": lambda name: __import__(name, fromlist=["*"]),
        "getattr": getattr,
        "call": lambda f, a, k: f(*a, **k),
        "getitem": lambda o, k: o[k],
        "iter": list,
        "len": len,
        "bool": bool,
        "repr": lambda o: repr(o)[:20000],
        "isinstance": isinstance,
        "contains": lambda o, v: v in o,
    }
    rfile = os.fdopen(fd, "rb", closefd=False)
    while True:
        line = rfile.readline()
        if not line:
            if home:
                shutil.rmtree(home, ignore_errors=True)
            os._exit(0)
        try:
            op, *args = json.loads(line)
            reply = {"ok": enc(ops[op](*[dec(a) for a in args]))}
        except BaseException as exc:  # noqa: BLE001 - whatever the code under test raised is its answer
            frames = [
                f"{os.path.relpath(f.filename, tree)}:{f.lineno}"
                for f in traceback.extract_tb(exc.__traceback__)
                if f.filename.startswith(tree + os.sep)
            ]
            reply = {"err": [type(exc).__name__, str(exc)[:2000], frames[::-1]]}
        sys.stdout.flush()
        _write(fd, reply)


# --- the comparer: a third uid, the harness's code only ---------------------------------------
class RemoteGone(Exception):
    """The server ended (or answered what is not an answer) before the part was done."""


class Remote:
    """The comparer's end of the connection: one request, one answer, decoded strictly."""

    def __init__(self, fd):
        self.fd, self.rfile, self.refs = fd, os.fdopen(fd, "rb", closefd=False), {}
        # the server vanished; it wrote what is not an answer; it raised SystemExit(0): the last two are attempts
        self.gone = self.garbled = self.exited = False

    def ask(self, op, *args):
        if self.gone:
            raise RemoteGone("the code under test's process has ended")
        request = [op, *[self.enc(a) for a in args]]  # a check sending what is not data fails here
        try:
            _write(self.fd, request)
            line = self.rfile.readline(LIMIT + 1)
            if not line or len(line) > LIMIT:
                raise EOFError
            reply = json.loads(line)
            if not isinstance(reply, dict) or len(reply) != 1 or not set(reply) <= {"ok", "err"}:
                raise ValueError("not one answer")
            if "ok" in reply:
                return self.dec(reply["ok"])
            name, msg, frames = reply["err"]
            self.exited = self.exited or (name == "SystemExit" and msg in ("0", "None", ""))
            error = _remote_error(str(name), str(msg), [str(f) for f in frames])
        except (OSError, EOFError, ValueError, TypeError, KeyError, RecursionError) as exc:
            self.gone, self.garbled = True, not isinstance(exc, OSError | EOFError)
            raise RemoteGone(
                f"the code under test's process ended or did not answer ({type(exc).__name__})"
            ) from None
        raise error

    def enc(self, x, depth=0):
        if type(x) is Ref:
            return {"$r": object.__getattribute__(x, "_id")}
        if type(x).__name__ == "Module" and "_ctxbench_ref" in vars(x):  # a proxy module (comparer.py)
            return {"$r": vars(x)["_ctxbench_ref"]}
        t = type(x)
        if t in (str, int, float, bool) or x is None:
            return x
        if depth < 100 and t in (list, tuple, set, frozenset, dict, bytes):
            if t is list:
                return [self.enc(v, depth + 1) for v in x]
            if t is dict:
                return {"$d": [[self.enc(k, depth + 1), self.enc(v, depth + 1)] for k, v in x.items()]}
            if t is bytes:
                return {"$b": x.decode("latin-1")}
            return {_TAG[t]: [self.enc(v, depth + 1) for v in x]}
        raise TypeError(f"a check sends the code under test data only, not a {t.__name__}")

    def dec(self, x):
        t = type(x)
        if t in (str, int, float, bool) or x is None:
            return x
        if t is list:
            return [self.dec(v) for v in x]
        if t is not dict or len(x) != 1 or next(iter(x)) not in _TAGS:
            raise ValueError("not data")
        ((tag, v),) = x.items()
        if tag == "$b":
            return str(v).encode("latin-1")
        if tag == "$r":
            rid, kind, _ = v
            if type(rid) is not int:
                raise ValueError("not a reference")
            return self.refs.setdefault(rid, Ref(self, rid, str(kind)))
        if tag == "$d":
            return {self.dec(k): self.dec(w) for k, w in v}
        return _MAKE[tag](self.dec(i) for i in v)


def _remote_error(name, msg, frames):
    """The code under test's exception, as the comparer raises it: a builtin Exception of that
    name (a check may expect a TypeError), else a RemoteError named so; never a BaseException
    that is not an Exception (SystemExit, KeyboardInterrupt) nor StopIteration."""
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)) or issubclass(
        cls, (StopIteration, StopAsyncIteration)
    ):
        cls = type(name if name.isidentifier() else "RemoteError", (RemoteError,), {})
    exc = cls(msg)
    exc.remote_frames = frames  # innermost first: the shipped runner names them (path:line)
    return exc


class RemoteError(Exception):
    """An exception of the code under test's own class."""


class Ref:
    """A value that lives in the server: every use is a request, every answer data or a Ref.
    Equality and hashing are the comparer's (identity): the agent's `__eq__` never decides."""

    __slots__ = ("_r", "_id", "_kind")

    def __init__(self, remote, rid, kind):
        object.__setattr__(self, "_r", remote)
        object.__setattr__(self, "_id", rid)
        object.__setattr__(self, "_kind", kind)

    def _ask(self, op, *args):
        return object.__getattribute__(self, "_r").ask(op, self, *args)

    def __getattribute__(self, name):
        if name == "__class__":  # isinstance(ref, int) is False here, without asking
            return Ref
        return Ref._ask(self, "getattr", name)

    def __call__(self, *args, **kwargs):
        return Ref._ask(self, "call", list(args), kwargs)

    def __getitem__(self, key):
        return Ref._ask(self, "getitem", key)

    def __iter__(self):
        return iter(Ref._ask(self, "iter"))

    def __len__(self):
        return Ref._ask(self, "len")

    def __bool__(self):
        return Ref._ask(self, "bool") is True

    def __contains__(self, value):
        return Ref._ask(self, "contains", value) is True

    def __instancecheck__(self, obj):  # isinstance(x, SomeClassOfTheAgents)
        return object.__getattribute__(self, "_r").ask("isinstance", obj, self) is True

    def __repr__(self):
        got = Ref._ask(self, "repr")
        return got if type(got) is str else "<?>"
