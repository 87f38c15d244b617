"""`tools/run_tests.py`, shipped read-only in every generated repository: the step checks'
test runner.

The shipped tests are plain `def test_*(): assert ...` functions, and starting pytest costs
~0.4 s in the sandbox, more than the tests themselves; a study runs thousands of step checks.
This runner imports the test files and calls their tests in one Python process (~50 ms).
The final acceptance check still runs the real pytest over the whole suite, and a test in
tests/tasks asserts the two agree. Each failure names `path:line` of the frames inside the
repository, because the simulated model re-reads the files a failing check names.
"""

RUNNER_PATH = "tools/run_tests.py"
RUN_TESTS = f"python3 -B {RUNNER_PATH}"

RUNNER_SOURCE = '''"""Run the test_* functions of test files in one process (shipped with the task; read-only).

    python3 -B tools/run_tests.py [tests/test_a.py ... | tests]

A fast stand-in for `pytest -q` on this repository's plain assert-style tests; the final
acceptance check runs the real pytest. Prints `path:line` for each failure, then
`N passed, M failed`; exits 1 if anything failed or nothing ran. `main(args, report)` also
hands the names of the tests that passed and failed (`path::name`) to `report`: the harness
certifies from those names, not from the exit code alone.
"""

import importlib.util
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def where(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if str(ROOT) in f.filename]
    # raised by the code under test in its own process (the harness's checks): its frames, innermost first
    places = " <- ".join(list(getattr(exc, "remote_frames", ())) + [
        f"{Path(f.filename).relative_to(ROOT).as_posix()}:{f.lineno}" for f in reversed(frames)])
    return f"{type(exc).__name__}: {exc} at {places or '?'}"


def files(args):
    out = []
    for arg in args or ["tests"]:
        path = Path(arg) if Path(arg).is_absolute() else ROOT / arg
        out += sorted(path.glob("test_*.py")) if path.is_dir() else [path]
    return out


def main(args, report=None):
    passed, failed = [], []
    for path in files(args):
        rel = path.relative_to(ROOT).as_posix()
        spec = importlib.util.spec_from_file_location("_test_" + path.stem, path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            failed.append(rel)
            print(f"{rel}: ERROR collecting: {where(exc)}")
            continue
        tests = [name for name, fn in vars(module).items() if name.startswith("test_") and callable(fn)]
        for name in tests:
            try:
                getattr(module, name)()
                passed.append(f"{rel}::{name}")
            except Exception as exc:
                failed.append(f"{rel}::{name}")
                print(f"{rel}::{name} FAILED: {where(exc)}")
    print(f"{len(passed)} passed, {len(failed)} failed")
    if report is not None:
        report(passed, failed)
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''
