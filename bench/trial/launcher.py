"""The check launcher: runs INSIDE the sandbox as `python3 -I -B -c "$LAUNCHER" --plan PLAN`
(bench/trial/certify.py builds the command), or for one part `... NONCE_FILE KIND TARGET ARGS...`.
Not imported by the harness.

A plan is the check's parts, then each standing invariant probe's (JSON: a list of groups, each
a list of `[NONCE_FILE, KIND, TARGET, ARGS...]`). Each part runs in a child forked from this
process, which never runs code under test itself: the same clean start as a new interpreter
per part, without paying one (~40 ms each, seven per check). Within a group a part runs only if
the one before exited 0 (as `&&`); the probes' output is discarded; the exit status is the
check group's (a child killed by a signal: 128 + the signal, as a shell says).

It reads its one-time nonce and deletes the file before any code under test runs, then runs
one part of a check in this process: `script`/`runner` load TARGET under a name that is not
`__main__` and call its `main(args)` themselves (`code` runs the harness's one-line program) (the runner with a `report` callback naming
its tests), `pytest` calls `pytest.main` with a plugin recording each test's outcome. Only a
normal return counts: SystemExit or any other exception from the code under test is
reported as such, and a process that dies early reports nothing. The report is one line,
`NONCE JSON`, appended next to the nonce file.
"""

import json
import os
import runpy
import sys
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


def launch(argv):
    nonce_file, kind, target, args = argv[0], argv[1], argv[2], argv[3:]
    with open(nonce_file) as f:
        nonce = f.read().strip()
    os.unlink(nonce_file)
    report_path = os.path.join(os.path.dirname(os.path.abspath(nonce_file)), "report")
    rec = {"kind": kind, "target": target}
    code = 1
    try:
        ret = (_pytest(args, rec) if kind == "pytest" else _code(args[0], rec) if kind == "code"
               else _script(kind, target, args, rec))
        code = int(ret or 0)
        rec["exit"] = code
    except SystemExit as exc:  # an exit with status 0 from inside the check is an attempt to pass it
        rec.update(exit=1, error=f"the code under test raised SystemExit({exc.code!r}) during the check",
                   early_exit=exc.code in (0, None))
    except BaseException as exc:  # noqa: BLE001 - whatever it was, the check did not pass
        _print_traceback(exc)
        rec.update(exit=1, error=f"{type(exc).__name__}: {exc}"[:500])
    sys.stdout.flush()
    sys.stderr.flush()
    with open(report_path, "a") as f:
        f.write(f"{nonce} {json.dumps(rec)}\n")
    os._exit(code if "error" not in rec else 1)  # no atexit hook of the code under test runs after


def run_plan(groups):
    rc = 0
    if any(part[1] == "pytest" for parts in groups for part in parts):
        import pytest  # noqa: F401  - once, before any code under test, for every child
    for g, parts in enumerate(groups):
        code = 0
        for part in parts:
            code = _child(part, quiet=g > 0)
            if code != 0:
                break
        if g == 0:
            rc = code
    sys.stdout.flush()
    os._exit(rc)


def _child(argv, quiet):
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            if quiet:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
            launch(argv)
        finally:
            os._exit(1)  # launch ends the process itself; this is only for a crash of its own
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    _SourceOnly.install()
    if sys.argv[1:2] == ["--plan"]:
        run_plan(json.loads(sys.argv[2]))
    else:
        launch(sys.argv[1:])
