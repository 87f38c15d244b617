"""The comparer (bench/trial/launcher.py): the process that runs a part of a check on the harness's
own files and so decides it, with every module of the agent's a proxy of the server's
(bench/trial/remote.py). Shipped into the sandbox as source with the launcher.

By construction no code of the agent's runs here: a meta-path finder placed first resolves every
import that would load a file of the tree that is not protected to a `Module` whose attributes
are the server's, and an audit hook refuses to compile or exec any such file, whatever loads it
(an import, runpy, a loader called directly).
"""

import importlib.abc
import importlib.machinery
import json
import os
import runpy
import sys
import traceback
import types

from bench.trial.remote import Ref, Remote


class Module(types.ModuleType):
    """A module of the agent's, as the comparer sees it: its attributes are the server's."""

    def __getattr__(self, name):
        if name.startswith("__") and name != "__all__":
            raise AttributeError(name)
        return self.__dict__["_ctxbench_remote"].ask("getattr", self, name)


class _Proxies(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The comparer's first meta-path finder: any module that would be loaded from the tree and
    is not a protected file becomes a Module whose code runs in the server; the interpreter's own
    modules win over a file of the tree that shadows one."""

    def __init__(self, remote, tree, trusted):
        self.remote, self.tree, self.trusted = remote, os.path.join(tree, ""), trusted
        self.own = [
            p for p in sys.path if p and os.path.isabs(p) and not os.path.join(p, "").startswith(self.tree)
        ]

    def find_spec(self, name, path, target=None):
        parent = name.rpartition(".")[0]
        if parent and type(sys.modules.get(parent)) is Module:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        where = self._in_tree(name, path)
        if where is None or self._trusted(where):
            return None
        if not parent:
            own = importlib.machinery.PathFinder.find_spec(name, self.own)
            if own is not None:
                return own
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def _in_tree(self, name, path):
        last = name.rpartition(".")[2]
        for entry in path if path is not None else sys.path:
            base = os.path.join(os.path.abspath(entry or "."), last)
            if not os.path.join(base, "").startswith(self.tree):
                continue
            for cand in (os.path.join(base, "__init__.py"), base + ".py", base):
                if os.path.exists(cand):
                    return os.path.relpath(cand, self.tree)
        return None

    def _trusted(self, rel):
        return rel in self.trusted or any(t.startswith(rel + "/") for t in self.trusted)

    def create_module(self, spec):
        module = Module(spec.name)
        got = self.remote.ask("import", spec.name)
        if type(got) is not Ref:
            raise ImportError(f"{spec.name} is not a module")
        module.__dict__.update(
            _ctxbench_remote=self.remote, _ctxbench_ref=object.__getattribute__(got, "_id"), __path__=[]
        )
        return module

    def exec_module(self, module):
        pass


def install(fd, tree, trusted, hidden=None):
    """Make this process a comparer: the agent's modules are the server's on `fd`, and no file of
    the tree that is not in `trusted` (protected paths, relative) is ever compiled here. `hidden`:
    the hidden checks' file, in a directory only this uid can read (launcher.py)."""
    remote = Remote(fd)
    tree = os.path.realpath(tree)
    if hidden:
        _serve_hidden(tree, hidden)
    finder = _Proxies(remote, tree, frozenset(trusted))
    sys.meta_path.insert(0, finder)

    inside = os.path.join(tree, "")

    def audit(event, args, _in=inside, _real=os.path.realpath, _t=frozenset(trusted)):
        if event in ("compile", "exec"):
            name = args[1] if event == "compile" else getattr(args[0], "co_filename", "")
            if isinstance(name, str) and name.startswith(os.sep):
                full = _real(name)
                if full.startswith(_in) and full[len(_in) :] not in _t:
                    raise ImportError(f"the judge never runs code of the agent's ({full[len(_in) :]})")

    sys.addaudithook(audit)
    return remote


def _serve_hidden(tree, hidden):
    """The hidden test files ({path: text}), read from `hidden` and handed to the loader as if they were the
    tree's (`tools/hidden/...`, a protected path: trusted), so the runner names their tests as it
    names any. They are never in the tree itself, which the code under test can read."""
    try:
        with open(hidden, encoding="utf-8") as f:
            files = json.load(f)
    except (OSError, ValueError):
        return  # not delivered: the hidden parts find no file, and fail
    served = {os.path.join(tree, path): text.encode() for path, text in files.items()}
    get_data = importlib.machinery.SourceFileLoader.get_data

    def get_hidden(self, path, _served=served, _get=get_data):
        data = _served.get(os.fspath(path))
        return data if data is not None else _get(self, path)

    importlib.machinery.SourceFileLoader.get_data = get_hidden  # type: ignore[method-assign]  # this process only


def _pytest(args, rec):
    import pytest

    class Recorder:
        def pytest_runtest_logreport(self, report):
            if report.failed:
                rec["failed"].append(report.nodeid)
            elif report.when == "call" and report.passed:
                rec["passed"].append(report.nodeid)

        def pytest_collectreport(self, report):
            if report.failed:
                rec["failed"].append(report.nodeid or "<collection>")

    rec.update(passed=[], failed=[])
    sys.path.insert(0, os.getcwd())  # as `python -m pytest` does
    return pytest.main(["--noconftest", "-p", "no:cacheprovider", *args], plugins=[Recorder()])


def _script(kind, target, args, rec):
    path = os.path.abspath(target)
    sys.argv = [target, *args]
    sys.path.insert(0, os.path.dirname(path))  # as `python SCRIPT` does
    main = runpy.run_path(path, run_name="__ctxbench_check__")["main"]
    if kind != "runner":
        return main(args)

    def report(passed, failed):
        rec.update(passed=[str(p) for p in passed], failed=[str(f) for f in failed])

    rec.update(passed=[], failed=["(the runner never reported its tests)"])
    return main(args, report=report)


def _code(source, rec):
    sys.argv = ["-c"]
    sys.path.insert(0, os.getcwd())  # as `python -c` does
    exec(compile(source, "<check>", "exec"), {"__name__": "__ctxbench_check__"})
    return 0


def _print_traceback(exc):
    """As Python prints it, without the launcher's and runpy's own frames."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(("<string>", "<bench.")) and os.path.basename(f.filename) != "runpy.py"
    ]
    sys.stderr.write(
        "Traceback (most recent call last):\n"
        + "".join(traceback.format_list(frames))
        + "".join(traceback.format_exception_only(type(exc), exc))
    )


def launch(kind, target, args, rec, _int=int, _str=str, _type=type, _trace=_print_traceback):
    """Run one part in this process (the comparer) and return its exit code. The names it uses
    are bound at definition: a belt, should code of the agent's ever run here (remote.py refuses it)."""
    try:
        ret = (
            _pytest(args, rec)
            if kind == "pytest"
            else _code(args[0], rec)
            if kind == "code"
            else _script(kind, target, args, rec)
        )
        code = _int(ret or 0)
        rec["exit"] = code
    except SystemExit as exc:  # an exit with status 0 from inside the check is an attempt to pass it
        rec.update(
            exit=1,
            error=f"the code under test raised SystemExit({exc.code!r}) during the check",
            early_exit=exc.code in (0, None),
        )
    except BaseException as exc:  # noqa: BLE001 - whatever it was, the check did not pass
        _trace(exc)
        rec.update(exit=1, error=(_type(exc).__name__ + ": " + _str(exc))[:500])
    return code if "error" not in rec else 1
