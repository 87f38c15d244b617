"""The check launcher, the judge: runs INSIDE the sandbox as the container's root,
`python3 -I -B -c "$LAUNCHER" --plan PLAN --tree TREE --trusted FILES --modules SRC [--hidden FIFO] [--uid UID]`
(bench/trial/certify.py builds it; SRC is bench/trial/remote.py and comparer.py). Not imported by
the harness. FIFO: where the final acceptance's hidden checks come from, once (`_receive`).

A plan is the check's parts, then each standing invariant probe's (JSON: a list of groups, each
a list of `[KIND, TARGET, ARGS...]`). The judge never runs code under test, and neither does
what decides a part: each part is two children forked from the judge (a clean start without a
new interpreter), each without the judge's report channel (fd 3), in TREE, the read-only copy of
the committed tree. The *server* drops to the agent's uid and is the only process that runs code
under test; the *comparer* drops to COMPARER_UID and runs the part on the harness's own files
(TRUSTED: the protected paths), every module of the agent's a proxy of the server's (remote.py),
so every comparison is made here, on data. The judge reads the comparer's exit status itself
(waitpid) and its one message from a pipe no process of the agent's holds (another uid cannot
open /proc/PID/fd, ptrace, signal or read its memory), ends a server that outlived its part
(the judge holds CAP_KILL: it never becomes the agent to end it) and lists whatever else of the
agent's or the comparer's is left, which the exec's own root shell ends, all at once, when the
launcher is done (bench/sandbox/judge.py). No process of the judge's ever runs as the agent's
uid. A part whose processes cannot be started (the agent's code holds every pid or all the
memory) fails, and the report says so. Within a group a part runs only if the one before exited
0 (as `&&`); the probes' output is discarded; the exit status is the check group's (killed by a
signal: 128 + the signal). When all parts are done the judge writes one line, `report JSON`,
on fd 3, with that status (`rc`): the harness takes the report only from an exec that exited
with it (certify.py).

In the comparer, `script`/`runner` load TARGET under a name that is not `__main__` and call its
`main(args)` (the runner with a `report` callback naming its tests), `code` runs the harness's
one-line program, `pytest` calls `pytest.main` with a plugin recording each test's outcome.
Only a normal return counts: SystemExit or any other exception is reported as such.
"""

import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
import types

REPORT_FD = 3  # the judge's report channel (bench/sandbox/judge.py): never open in a child
SERVER_EXIT_S = 5.0  # how long an ended part waits for the code under test's process to exit by itself
AGENT_NOFILE = 1024  # open files of the code under test (judge.py's bound on agent commands)
HIDDEN_WAIT_S = 30  # how long the hidden checks' reader waits for the harness's writer
HIDDEN_FILE = "hidden.json"  # in the comparers' own directory: {path: text} of the hidden test files


class _SourceOnly:
    """Where code under test comes from: a directory of the interpreter's own (sys.path as
    `python3 -I` starts, before any code under test) is imported as usual; any other (the
    working copy, /tmp) from `.py` source only, compiled afresh. Python would otherwise run a
    `.pyc` the agent left in place of the source: a `__pycache__` entry whose recorded size and
    mtime match wrong source put back after compiling right code, or a `helper.pyc` with no
    source, which git ignores, so the tree never holds the code the check ran."""

    def __init__(self, trusted):
        import importlib.machinery as machinery

        class FromSource(machinery.SourceFileLoader):
            def path_stats(self, path):
                raise OSError("bytecode of the working copy is never read")  # so: compile the source

        self.trusted = tuple(os.path.join(p, "") for p in trusted)
        self.default = next(h for h in sys.path_hooks if "FileFinder" in getattr(h, "__qualname__", ""))
        self.source_only = machinery.FileFinder.path_hook((FromSource, machinery.SOURCE_SUFFIXES))

    def __call__(self, path):
        full = os.path.join(os.path.abspath(path or "."), "")
        return (self.default if full.startswith(self.trusted) else self.source_only)(path)

    @classmethod
    def install(cls):
        hook = cls([p for p in sys.path if p and os.path.isabs(p)])
        sys.path_hooks[:] = [hook if h is hook.default else h for h in sys.path_hooks]
        for path in [p for p in sys.path_importer_cache if not os.path.join(p, "").startswith(hook.trusted)]:
            del sys.path_importer_cache[path]  # a finder made before the hook was in place


def run_plan(groups, tree, uid, trusted=(), hidden=""):
    """The judge: take the hidden checks off their channel (`_receive`), run every part
    (`_child`), write the report on REPORT_FD."""
    held, lost = _receive(hidden, uid)  # first: no process of the agent's exists yet (the exec's reap ran)
    if lost:  # no part runs: a reader of the agent's must never meet a writer still waiting for ours
        _drop(held, uid)
        _report({"parts": [], "rc": 1, "hidden": lost}, 1)
    if any(part[0] == "pytest" for parts in groups for part in parts):
        import pytest  # noqa: F401  - once, before any code under test, for every child
    done, rc = [], 0
    for g, parts in enumerate(groups):
        code = 0
        for i, part in enumerate(parts):
            rec = _child(part, tree, uid, g > 0, trusted, held)
            done.append([g, i, rec])
            code = rec["exit"]
            if code != 0:
                break
        if g == 0:
            rc = code
    _drop(held, uid)
    _report({"parts": done, "rc": rc}, rc)


def _report(whole, rc):
    sys.stdout.flush()
    line = ("report " + json.dumps(whole) + "\n").encode()
    while line:
        line = line[os.write(REPORT_FD, line) :]
    os._exit(rc)


def _receive(channel, uid):
    """The hidden checks (bench/trial/hidden_checks.py): a child of the judge's reads them off
    `channel` (a FIFO the harness writes once) and writes them into a fresh directory (mkdtemp:
    0700, a name no one held) that it then gives to the comparers' uid, which alone can read it.
    The judge never holds the text, so no server it forks inherits it in its memory. Returns the
    directory (None without a channel) and, if that failed, why: "lost" (nothing came: the
    harness's), "unwritable" (it could not be kept: /tmp is full, which only the agent fills)."""
    if not channel:
        return None, ""
    try:
        held = tempfile.mkdtemp(prefix="ctxbench-hidden-")
    except OSError:
        return None, "unwritable"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 2  # until the text came
        try:
            os.close(REPORT_FD)
            signal.alarm(HIDDEN_WAIT_S)  # a writer that never comes ends this child, not the check
            data, fd = b"", os.open(channel, os.O_RDONLY)
            while chunk := os.read(fd, 65536):
                data += chunk
            signal.alarm(0)
            if isinstance(json.loads(data), dict):
                code = 1  # until it is kept
                path = os.path.join(held, HIDDEN_FILE)
                out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
                os.close(out)
                if uid is not None:
                    os.chown(path, COMPARER_UID, COMPARER_UID)
                    os.chown(held, COMPARER_UID, COMPARER_UID)
                code = 0
        finally:
            os._exit(code)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return held, {0: "", 1: "unwritable"}.get(code, "lost")


def _drop(held, uid):
    """Remove the hidden checks' directory: back to root first (CAP_CHOWN; no CAP_DAC_OVERRIDE
    lets root into a 0700 directory of another uid)."""
    if held is None:
        return
    if uid is not None:
        for path in (held, os.path.join(held, HIDDEN_FILE)):
            try:
                os.chown(path, 0, 0)
            except OSError:
                pass
    shutil.rmtree(held, ignore_errors=True)


def _child(part, tree, uid, quiet, trusted, held=None):
    """One part: the server (as `uid`, code under test) and the comparer (as COMPARER_UID, the
    verdict). Returns what the judge saw: the comparer's exit status and messages, the server's
    exit status, and the processes left. Nothing the server sends reaches the judge."""
    try:
        return _run_part(part, tree, uid, quiet, trusted, held)
    except OSError as e:  # fork or pipe refused: the agent's processes hold the pids, memory or files
        return {
            "exit": 1,
            "claims": 0,
            "claim": None,
            "server": None,
            "ended": _processes_of(uid),
            "error": f"the judge could not start the part ({e.strerror or e}): the processes of the "
            "code under test hold what it needs",
        }


def _run_part(part, tree, uid, quiet, trusted, held):
    kind, target, args = part[0], part[1], part[2:]
    home = os.path.join(tempfile.gettempdir(), "ctxbench-check-" + os.urandom(8).hex())
    ours, theirs = socket.socketpair()
    sys.stdout.flush()
    sys.stderr.flush()
    server = _fork(uid, tree, home, quiet, agent=True)
    if server == 0:
        try:
            ours.close()
            remote.serve(theirs.fileno(), tree, home)
        finally:
            os._exit(1)
    theirs.close()
    r, w = os.pipe()
    # not derivable from `home`
    own = os.path.join(tempfile.gettempdir(), "ctxbench-judge-" + os.urandom(8).hex())
    try:
        decider = _fork(None if uid is None else COMPARER_UID, tree, own, quiet, r)
    except OSError:
        os.kill(server, signal.SIGKILL)
        os.waitpid(server, 0)
        raise
    if decider == 0:
        code = 1
        try:
            peer = comparer.install(ours.fileno(), tree, trusted, held and os.path.join(held, HIDDEN_FILE))
            rec = {"kind": kind, "target": target}
            code = comparer.launch(kind, target, args, rec)
            rec.update(server_gone=peer.gone, server_garbled=peer.garbled, server_exited=peer.exited)
            sys.stdout.flush()
            sys.stderr.flush()
            os.write(w, (json.dumps(rec) + "\n").encode())
            shutil.rmtree(own, ignore_errors=True)
        finally:
            os._exit(code)
    ours.close()
    os.close(w)
    raw, status = _collect(decider, r)
    os.close(r)
    claims = []
    for text in raw.decode("utf-8", "replace").splitlines():
        try:
            claims.append(json.loads(text))
        except ValueError:
            claims.append({"error": "unreadable message", "forged": True})
    served = None
    # It ends when the comparer's end closes: a server still there is ended below, and counts as a
    # process left (no reuse). The wait is a deadline, not a count of polls: on a loaded machine an
    # honest server may take more than a second to be scheduled and exit.
    deadline = time.monotonic() + SERVER_EXIT_S
    while served is None and time.monotonic() < deadline:
        got, sstatus = os.waitpid(server, os.WNOHANG)
        if got:
            served = os.waitstatus_to_exitcode(sstatus)
        else:
            time.sleep(0.005)
    # Whatever is still there is listed, and ended by the exec's root shell after the launcher
    # (judge.py's REAP: all at once, which a pid at a time from here could not be).
    ended = [p for p in _processes_of(uid) if p.split()[0] != str(server)]
    if served is None:
        ended.append(f"{server} (the part's server)")
        os.kill(server, signal.SIGKILL)  # the judge's CAP_KILL: its own child, from outside its uid
        served = os.waitstatus_to_exitcode(os.waitpid(server, 0)[1])
    try:  # a server that ended early (os._exit on import) left its HOME: /tmp is root's, so an empty one goes
        os.rmdir(home)
    except OSError:  # removed by the server, or holding what the code under test left: the probe sees it
        pass
    exit_code = os.waitstatus_to_exitcode(status)
    return {
        "exit": 128 - exit_code if exit_code < 0 else exit_code,
        "claims": len(claims),
        "claim": claims[0] if claims else None,
        "server": served,
        "ended": ended,
    }


def _fork(uid, tree, home, quiet, *close, agent=False):
    """A child as `uid` in `tree`, with a fresh HOME, without the judge's report channel. The
    agent's (`agent`: the server) first in the OOM killer's line, with at most AGENT_NOFILE files."""
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (REPORT_FD, *close):
                os.close(fd)
            if agent and uid is not None:
                with open("/proc/self/oom_score_adj", "w") as f:
                    f.write("1000")
                resource.setrlimit(resource.RLIMIT_NOFILE, (AGENT_NOFILE, AGENT_NOFILE))
            _become(uid)
            os.mkdir(home, 0o700)
            os.environ.update(HOME=home, TMPDIR=home)
            tempfile.tempdir = None
            os.chdir(tree)
            if quiet:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
        except BaseException:
            os._exit(1)
    return pid


def _collect(pid, r, limit=1 << 20):
    """The child's messages (at most `limit` bytes) and its wait status. Stops once the child has
    exited and what it wrote is read: a process it left may hold the pipe open for ever."""
    buf, eof = b"", False
    while True:
        if not eof and select.select([r], [], [], 0.05)[0]:
            chunk = os.read(r, 65536)
            buf += chunk[: max(0, limit - len(buf))]
            eof = not chunk
            continue
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            break
        if eof:
            time.sleep(0.005)
    os.set_blocking(r, False)
    for _ in range(64):  # what it wrote just before it exited
        try:
            chunk = os.read(r, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        buf += chunk[: max(0, limit - len(buf))]
    return buf, status


def _become(uid):
    if uid is not None:  # the agent's: no capability survives (no keep-caps), no group of the judge's
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def _processes_of(uid):
    """ "pid name" of every process of the agent's uid and the comparers' (none without a uid)."""
    if uid is None:
        return []
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                owner = next(int(x.split()[1]) for x in f if x.startswith("Uid:"))
            with open(f"/proc/{d}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError, StopIteration):
            continue
        if owner in (uid, COMPARER_UID):
            found.append(f"{d} {name}")
    return found


def _load(modules):
    """The harness's modules shipped beside this program ([name, source], in order), as importable."""
    for name, source in modules:
        parts = name.split(".")
        for k in range(1, len(parts)):
            sys.modules.setdefault(".".join(parts[:k]), types.ModuleType(".".join(parts[:k])))
        module = sys.modules[name] = types.ModuleType(name)
        exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return [sys.modules[name] for name, _ in modules]


if __name__ == "__main__":
    opts = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
    remote, comparer = _load(json.loads(opts["--modules"]))  # bench/trial/remote.py, comparer.py
    _SourceOnly.install()
    uid = int(opts["--uid"]) if opts.get("--uid") else None
    COMPARER_UID = 10002 if uid != 10002 else 10003  # neither the agent's nor the judge's
    run_plan(
        json.loads(opts["--plan"]),
        opts["--tree"],
        uid,
        json.loads(opts.get("--trusted", "[]")),
        opts.get("--hidden", ""),
    )
