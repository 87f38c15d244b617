"""The check launcher, the judge: runs INSIDE the sandbox as the container's root,
`python3 -I -B -c "$LAUNCHER" --plan PLAN --tree TREE [--uid UID]` (bench/trial/certify.py
builds the command). Not imported by the harness.

A plan is the check's parts, then each standing invariant probe's (JSON: a list of groups, each
a list of `[KIND, TARGET, ARGS...]`). The launcher never runs code under test itself: each part
runs in a child forked from it (the same clean start as a new interpreter, without paying one,
~40 ms each, seven per check) that first drops to the agent's uid (no capability left, not
dumpable), closes the judge's report channel (fd 3), makes a fresh HOME and enters TREE, the
read-only copy of the committed tree. The judge reads the child's exit status itself
(waitpid) and its one message from a pipe, then ends every process of the agent's uid before
the next part, so nothing the code under test starts can reach a later part or the judge:
another uid cannot ptrace, signal or read its memory. Within a group a part runs only if the
one before exited 0 (as `&&`); the probes' output is discarded; the exit status is the check
group's (a child killed by a signal: 128 + the signal, as a shell says). When all parts are
done the judge writes one line, `report JSON`, on fd 3: the exec's stderr stream, which no
process of the agent's holds.

In a child, `script`/`runner` load TARGET under a name that is not `__main__` and call its
`main(args)` (the runner with a `report` callback naming its tests), `code` runs the harness's
one-line program, `pytest` calls `pytest.main` with a plugin recording each test's outcome.
Only a normal return counts: SystemExit or any other exception from the code under test is
reported as such, and a process that dies early sends nothing. What the child sends is built
from names bound before any code under test ran (see `launch`).
"""

import json
import os
import runpy
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback


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
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != "<string>"
              and os.path.basename(f.filename) != "runpy.py"]
    sys.stderr.write("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
                     + "".join(traceback.format_exception_only(type(exc), exc)))


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


REPORT_FD = 3  # the judge's report channel (bench/sandbox/judge.py): never open in a child


def launch(kind, target, args, rec, _int=int, _str=str, _type=type, _trace=_print_traceback):
    """Run one part in this process (a child of the judge's, as the agent's uid) and return its
    exit code. Every name used after the code under test ran is bound here, at definition:
    code under test that replaces a global of this module (`import __main__`) or a builtin
    changes nothing of what is reported."""
    try:
        ret = (_pytest(args, rec) if kind == "pytest" else _code(args[0], rec) if kind == "code"
               else _script(kind, target, args, rec))
        code = _int(ret or 0)
        rec["exit"] = code
    except SystemExit as exc:  # an exit with status 0 from inside the check is an attempt to pass it
        rec.update(exit=1, error=f"the code under test raised SystemExit({exc.code!r}) during the check",
                   early_exit=exc.code in (0, None))
    except BaseException as exc:  # noqa: BLE001 - whatever it was, the check did not pass
        _trace(exc)
        rec.update(exit=1, error=(_type(exc).__name__ + ": " + _str(exc))[:500])
    return code if "error" not in rec else 1


def run_plan(groups, tree, uid):
    """The judge: run every part in a child under the agent's uid, read each child's exit status
    and its one message itself, end whatever the child left, and write the report on REPORT_FD."""
    if any(part[0] == "pytest" for parts in groups for part in parts):
        import pytest  # noqa: F401  - once, before any code under test, for every child
    done, rc = [], 0
    early = _reap(uid, None)  # whatever of the agent's is still there (the host reaped it; this does not trust that)
    for g, parts in enumerate(groups):
        code = 0
        for i, part in enumerate(parts):
            rec = _child(part, tree, uid, quiet=g > 0)
            done.append([g, i, rec])
            code = rec["exit"]
            if code != 0:
                break
        if g == 0:
            rc = code
    sys.stdout.flush()
    line = ("report " + json.dumps({"parts": done, "ended": early}) + "\n").encode()
    while line:
        line = line[os.write(REPORT_FD, line):]
    os._exit(rc)


def _child(part, tree, uid, quiet):
    """One part in a child, as `uid`; returns what the judge saw: its exit status (waitpid), how
    many messages it sent and the first, and the processes it left (ended here)."""
    kind, target, args = part[0], part[1], part[2:]
    home = os.path.join(tempfile.gettempdir(), "ctxbench-check-" + os.urandom(8).hex())
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        send, dumps, leave, code = os.write, json.dumps, os._exit, 1  # bound before code under test runs
        try:
            os.close(r)
            os.close(REPORT_FD)
            _become(uid)
            os.mkdir(home, 0o700)
            os.environ.update(HOME=home, TMPDIR=home)
            tempfile.tempdir = None
            os.chdir(tree)
            if quiet:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
            rec = {"kind": kind, "target": target}
            code = launch(kind, target, args, rec)
            sys.stdout.flush()
            sys.stderr.flush()
            send(w, (dumps(rec) + "\n").encode())
        finally:
            leave(code)
    os.close(w)
    raw, status = _collect(pid, r)
    os.close(r)
    claims = []
    for text in raw.decode("utf-8", "replace").splitlines():
        try:
            claims.append(json.loads(text))
        except ValueError:
            claims.append({"error": "unreadable message", "forged": True})
    exit_code = os.waitstatus_to_exitcode(status)
    return {"exit": 128 - exit_code if exit_code < 0 else exit_code, "claims": len(claims),
            "claim": claims[0] if claims else None, "ended": _reap(uid, home)}


def _collect(pid, r, limit=1 << 20):
    """The child's messages (at most `limit` bytes) and its wait status. Stops once the child has
    exited and what it wrote is read: a process it left may hold the pipe open for ever."""
    buf, eof = b"", False
    while True:
        if not eof and select.select([r], [], [], 0.05)[0]:
            chunk = os.read(r, 65536)
            buf += chunk[:max(0, limit - len(buf))]
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
        buf += chunk[:max(0, limit - len(buf))]
    return buf, status


def _become(uid):
    if uid is not None:  # the agent's: no capability survives (no keep-caps), no group of the judge's
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def _reap(uid, home):
    """End every process of the agent's uid (all of them: the part is over) and remove the
    child's HOME, from a child of the judge's as that uid (root holds no CAP_KILL). Returns
    "pid name" of each process ended."""
    ended = _processes_of(uid) if uid is not None else []
    for _ in range(200):  # at the pids limit a fork fails for as long as the agent's processes hold it
        try:
            pid = os.fork()
            break
        except BlockingIOError:
            time.sleep(0.025)
    else:
        return ended + ["(could not fork to end them)"]
    if pid == 0:
        try:
            _become(uid)
            # kill(-1) says success while any other process exists (this judge): ask /proc instead
            for i in range(600 if ended else 0):
                os.kill(-1, signal.SIGKILL)  # every process of this uid but this one
                if not _processes_of(uid, os.getpid()):
                    break
                time.sleep(0.01 if i > 100 else 0)
            if home:
                shutil.rmtree(home, ignore_errors=True)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    return ended


def _processes_of(uid, but=None):
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == but:
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                owner = next(int(x.split()[1]) for x in f if x.startswith("Uid:"))
            with open(f"/proc/{d}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError, StopIteration):
            continue
        if owner == uid:
            found.append(f"{d} {name}")
    return found


if __name__ == "__main__":
    _SourceOnly.install()
    opts = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
    run_plan(json.loads(opts["--plan"]), opts["--tree"], int(opts["--uid"]) if opts.get("--uid") else None)
