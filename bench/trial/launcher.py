"""The check launcher: runs INSIDE the sandbox as `python3 -I -B -c "$LAUNCHER" NONCE_FILE KIND
TARGET ARGS...` (bench/trial/certify.py builds the command). Not imported by the harness.

It reads its one-time nonce and deletes the file before any code under test runs, then runs
one part of a check in this process: `script`/`runner` load TARGET under a name that is not
`__main__` and call its `main(args)` themselves (the runner with a `report` callback naming
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


def _print_traceback(exc):
    """As Python prints it, without the launcher's and runpy's own frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename != "<string>"
              and os.path.basename(f.filename) != "runpy.py"]
    sys.stderr.write("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
                     + "".join(traceback.format_exception_only(type(exc), exc)))


def launch(argv):
    nonce_file, kind, target, args = argv[0], argv[1], argv[2], argv[3:]
    with open(nonce_file) as f:
        nonce = f.read().strip()
    os.unlink(nonce_file)
    report_path = os.path.join(os.path.dirname(os.path.abspath(nonce_file)), "report")
    rec = {"kind": kind, "target": target}
    code = 1
    try:
        ret = _pytest(args, rec) if kind == "pytest" else _script(kind, target, args, rec)
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


if __name__ == "__main__":
    launch(sys.argv[1:])
