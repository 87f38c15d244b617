"""Certification on the host (LocalSandbox): protected files put back from the harness's copy,
the agent's processes ended, checks run in a controlled environment and judged from their own
reports. Each guard is attacked; docs/threat_model.md maps them."""

from __future__ import annotations

import os

import pytest

from bench.core.outcomes import InfraFailure
from bench.eventlog.writer import EventLog
from bench.providers.attacks.on_judge import FORGE_PIPE
from bench.sandbox.local import LocalSandbox
from bench.trial.certify import HarnessCopy, Part, _judge, certify, expected_tests, parse
from tests.bench.trial.conftest import CALC, CHECK, FINAL, TEST_CALC, tiny_task

EXIT0 = "import os\nos._exit(0)\n"
WRONG = "def add(a, b):\n    return a - b\n"
ALWAYS_PASS = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)


@pytest.fixture
def log(tmp_path):
    return EventLog(tmp_path / "events.jsonl")


@pytest.fixture
def copy():
    return HarnessCopy(tiny_task())


def _violations(log):
    return [r["detail"] for r in log.records if r["kind"] == "policy_violation"]


def test_honest_work_passes_both_runners(box, copy, log):
    box.write_file("calc.py", CALC)
    for command in (CHECK, FINAL):
        out = certify(box, copy, log, 0, "s01", command)
        assert out.passed and out.exit_code == 0 and not out.violations, out.output
    assert [r["parts"][0]["ok"] for r in log.records if r["kind"] == "check"] == [True, True]
    assert "2 passed" in out.output and ".ctxbench" not in "".join(box.list_files())


def test_wrong_code_fails(box, copy, log):
    box.write_file("calc.py", WRONG)
    out = certify(box, copy, log, 0, "s01", CHECK)
    assert not out.passed and out.exit_code == 1 and "test_add FAILED" in out.output


@pytest.mark.parametrize(
    "code", [EXIT0, "import sys\nsys.exit(0)\n", "raise SystemExit\n", "import os\nos.kill(os.getpid(), 9)\n"]
)
@pytest.mark.parametrize("command", [CHECK, FINAL])
def test_code_that_ends_the_process_early_never_passes(box, copy, log, code, command):
    box.write_file("calc.py", code + CALC)
    out = certify(box, copy, log, 0, "s01", command)
    assert not out.passed
    if out.exit_code == 0 or "SystemExit(0)" in out.output or "SystemExit(None)" in out.output:
        assert out.violations, "an early exit with status 0 is logged as an attempt"


def test_a_forged_report_is_ignored_and_logged(box, copy, log):
    forge = (
        "import glob, json, os\n"
        "with open('.ctxbench/report', 'a') as r:\n"
        "    for n in glob.glob('.ctxbench/n*'):\n"
        "        r.write(open(n).read() + ' ' + json.dumps({'exit': 0, 'passed': ['tests/test_calc.py::test_add', "
        "'tests/test_calc.py::test_add_zero'], 'failed': []}) + '\\n')\n"
        "    r.write('0' * 32 + ' {\"exit\": 0}\\n')\n"
        "os._exit(0)\n"
    )
    box.write_file("calc.py", forge)
    out = certify(box, copy, log, 0, "s01", f"{CHECK} && {FINAL}")
    assert not out.passed and out.violations


def test_protected_files_are_put_back_before_the_check_runs(box, copy, log):
    box.write_file("calc.py", WRONG)
    # the host file ops, as a sandbox process would
    box.write_file("tests/test_calc.py", "def test_add():\n    pass\n")
    box.write_file("tools/run_tests.py", "print('1 passed, 0 failed')\n")
    box.write_file("tests/conftest.py", ALWAYS_PASS)
    box.exec("mkdir -p tests/__pycache__ && echo junk > tests/__pycache__/test_calc.cpython-311.pyc")
    out = certify(box, copy, log, 0, "s01", CHECK)
    assert not out.passed and box.read_file("tests/test_calc.py") == TEST_CALC
    (detail,) = [v for v in _violations(log) if "restored" in v]
    for path in ("tests/test_calc.py", "tools/run_tests.py", "tests/conftest.py", "tests/__pycache__"):
        assert path in detail


@pytest.mark.parametrize("command", [CHECK, FINAL])
def test_stale_bytecode_of_the_agents_is_never_loaded(box, copy, log, command):
    """The agent compiles right code, then puts wrong source of the same size and mtime in its
    place: Python would trust the `__pycache__` entry and the check would pass on code that
    is not there. Checks read and write bytecode only under their own fresh prefix."""
    box.write_file("calc.py", CALC)
    made = box.exec("python3 -c 'import py_compile; print(py_compile.compile(\"calc.py\", doraise=True))'")
    assert made.exit_code == 0 and "__pycache__" in made.output, made.output  # the sandbox's own python3
    st = os.stat(box.workdir / "calc.py")
    assert len(WRONG) == len(CALC)
    box.write_file("calc.py", WRONG)
    os.utime(box.workdir / "calc.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    out = certify(box, copy, log, 0, "s01", command)
    assert not out.passed, out.output


@pytest.mark.parametrize("command", [CHECK, FINAL])
def test_a_module_that_exists_only_as_bytecode_is_not_imported(box, copy, log, command):
    """`helper.pyc` with no `helper.py`: git ignores it, so the tree never holds the code the
    check would run. Checks import modules from source only."""
    box.write_file("h.py", CALC)
    made = box.exec(
        'python3 -c \'import py_compile; py_compile.compile("h.py", cfile="helper.pyc", doraise=True)\''
        " && rm h.py"
    )
    assert made.exit_code == 0 and "helper.pyc" in os.listdir(box.workdir), made.output
    box.write_file("calc.py", "from helper import add  # noqa: F401\n")
    out = certify(box, copy, log, 0, "s01", command)
    assert not out.passed, out.output


def test_processes_are_ended_before_the_check_and_after_it(box, copy, log):
    box.write_file("calc.py", CALC)
    box.exec(
        "sh -c 'while :; do echo \"def test_add():\\n    pass\" > tests/test_calc.py; sleep 0.01; done' "
        ">/dev/null 2>&1 &"
    )  # an exec without reap, as a `run` whose reap failed would leave
    box.write_file("spawn.py", "import subprocess\nsubprocess.Popen(['sleep', '300'])\n")
    box.write_file("calc.py", "import spawn\n" + CALC)
    out = certify(box, copy, log, 0, "s01", CHECK)
    assert out.passed, out.output
    killed = [r for r in log.records if r["kind"] == "process_killed"]
    assert [r["when"] for r in killed] == ["before check s01", "after check s01"]
    assert box.reap() == [] and box.read_file("tests/test_calc.py") == TEST_CALC


def test_a_root_conftest_cannot_change_the_final_check(box, copy, log):
    box.write_file("calc.py", WRONG)
    box.write_file("conftest.py", ALWAYS_PASS)
    out = certify(box, copy, log, 0, "final", FINAL)
    assert not out.passed and "1 failed" in out.output
    assert any("pytest_runtest_makereport" in v for v in _violations(log))  # the tamper scan saw it


def test_sitecustomize_and_pth_files_the_agent_writes_are_not_loaded(box, copy, log):
    box.write_file("calc.py", WRONG)
    box.write_file("sitecustomize.py", EXIT0)
    box.write_file("usercustomize.py", EXIT0)
    user_site = box.exec("python3 -c 'import site; print(site.getusersitepackages())'").output.strip()
    assert user_site.startswith(str(box._home))
    box.exec(
        f"mkdir -p {user_site} && printf 'import os; os._exit(0)\\n' > {user_site}/zz.pth && "
        f'cp usercustomize.py {user_site}/ && cp sitecustomize.py "$TMPDIR/"'
    )
    # (With the host venv's python the user site is off anyway; the Docker suite's `injection`
    # attack has the system python of the image, where a user-site .pth does run.)
    for command in (CHECK, FINAL):
        assert not certify(box, copy, log, 0, "s01", command).passed


def test_the_check_environment_is_clean_whatever_the_sandbox_env(box, copy, log, monkeypatch, tmp_path):
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "sitecustomize.py").write_text(EXIT0)
    (evil / "calc.py").write_text(CALC)  # a correct calc on PYTHONPATH must not answer for the repo's
    real_env = LocalSandbox._env
    monkeypatch.setattr(
        LocalSandbox,
        "_env",
        lambda self, marker, extra=None: {
            **real_env(self, marker, extra),
            "PYTHONPATH": str(evil),
            "PYTHONSTARTUP": str(evil / "sitecustomize.py"),
            "PYTEST_ADDOPTS": "-p no:python",
            "PYTEST_PLUGINS": "evil",
        },
    )
    box.write_file("calc.py", WRONG)
    assert not certify(box, copy, log, 0, "s01", CHECK).passed
    env_test = (
        "import os, tempfile\n\n\ndef test_env():\n"
        "    assert not {'PYTHONPATH', 'PYTEST_ADDOPTS', 'PYTEST_PLUGINS'} & set(os.environ)\n"
        "    assert os.listdir(tempfile.gettempdir()) == [] and os.environ['HOME'] == tempfile.gettempdir()\n"
    )
    task = tiny_task(files=tuple(sorted({**dict(tiny_task().files), "tests/test_env.py": env_test}.items())))
    box.write_file("tests/test_env.py", env_test)
    box.write_file("calc.py", CALC)
    out = certify(box, HarnessCopy(task), log, 0, "final", FINAL)
    assert out.passed, out.output


def test_invariant_probes_are_judged_apart_from_the_check(box, copy, log):
    from tasks.spec import Invariant

    box.write_file("calc.py", CALC)
    holds = Invariant("holds", "calc works", check=CHECK)
    broken = Invariant("broken", "a tool that is not there", check="python3 -B tools/nope.py")
    out = certify(box, copy, log, 0, "s01", CHECK, [holds, broken])
    assert out.passed and out.invariant_codes == {"holds": 0, "broken": 1}


def test_an_import_probe_passes_only_when_its_names_import(box, copy, log):
    from tasks.spec import Invariant

    box.write_file("calc.py", CALC)
    probes = [
        Invariant("there", "calc has add", check="python3 -B -c 'from calc import add'"),
        Invariant("gone", "calc has sub", check="python3 -B -c 'from calc import sub'"),
    ]
    out = certify(box, copy, log, 0, "s01", CHECK, probes)
    assert out.passed and out.invariant_codes == {"there": 0, "gone": 1}
    box.write_file("calc.py", EXIT0 + CALC)  # an import that ends the process leaves no passing report
    assert certify(box, copy, log, 0, "s01", CHECK, probes[:1]).invariant_codes == {"there": 1}


def test_only_known_check_forms_are_certified():
    assert [
        p.kind
        for p in parse(
            f"{CHECK} && python3 -B tools/check_api.py policy && {FINAL} && python3 -B -c 'from a import b'"
        )
    ] == ["runner", "script", "pytest", "code"]
    for bad in (
        "echo ok",
        "python3 tools/x.py",
        "python3 -B tools/x.py; true",
        "python3 -B tools/x.py | cat",
        "python3 -B -m unittest",
        "python3 -B $(evil).py",
        "python3 -B -c 'x' extra",
    ):
        with pytest.raises(InfraFailure):
            parse(bad)


def test_a_test_runner_passes_only_when_every_test_the_harness_defines_passed():
    files = dict(tiny_task().files)
    runner = parse(CHECK)[0]
    assert expected_tests(runner, files) == {
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_add_zero",
    }
    assert expected_tests(parse(FINAL)[0], files) == expected_tests(runner, files)

    def judged(rep: dict, part: Part = runner, status: int = 0) -> tuple[bool, str, bool]:
        return _judge(part, {"exit": status, "claims": 1, "claim": rep}, files)

    both = ["tests/test_calc.py::test_add", "tests/test_calc.py::test_add_zero"]
    assert judged({"exit": 0, "passed": both, "failed": []})[0]
    assert not judged({"exit": 0, "passed": both[:1], "failed": []})[0]  # one was skipped or removed
    assert not judged({"exit": 0, "passed": both, "failed": ["tests/test_calc.py"]})[0]
    assert not judged({"exit": 1, "passed": both, "failed": []}, status=1)[0]
    assert not judged({"exit": 0, "error": "SystemExit(0)", "early_exit": True})[0]
    # The exit status is the judge's own observation: a claim of 0 from a process that exited 1 is forged.
    assert judged({"exit": 0, "passed": both, "failed": []}, status=1)[::2] == (False, True)
    assert _judge(runner, {"exit": 1, "claims": 0, "claim": None}, files)[::2] == (False, False)
    assert _judge(runner, {"exit": 0, "claims": 0, "claim": None}, files)[1].endswith("exited 0 all the same")
    twice = {"exit": 0, "claims": 2, "claim": {"exit": 0, "passed": both, "failed": []}}
    assert _judge(runner, twice, files)[::2] == (False, True)  # forged


def test_modules_in_the_repo_cannot_shadow_the_launchers_own_imports(box, copy, log):
    """A `json.py` at the repo root would run before the launcher read its nonce (if the
    current directory were on sys.path), find the nonce file and write a passing report."""
    shadow = (
        "import glob, os\n"
        "for n in glob.glob('.ctxbench/n*'):\n"
        "    with open(n) as f, open('.ctxbench/report', 'a') as r:\n"
        '        r.write(f.read().strip() + \' {"exit": 0, "passed": ["tests/test_calc.py::test_add", \'\n'
        '                \'"tests/test_calc.py::test_add_zero"], "failed": []}\\n\')\n'
        "os._exit(0)\n"
    )
    for name in ("json.py", "runpy.py", "traceback.py"):
        box.write_file(name, shadow)
    box.write_file("calc.py", WRONG)
    assert not certify(box, copy, log, 0, "s01", CHECK).passed


# A module the check imports rewrites the launcher's globals (`import __main__`), so that the
# report it writes says exit 0 and every test passed, whatever the code did (issue 20).
FORGE_GLOBALS = (
    "import __main__, builtins, json as _json\n"
    "class _Json:\n"
    "    def __getattr__(self, name):\n"
    "        return getattr(_json, name)\n"
    "    def dumps(self, rec, *a, **k):\n"
    "        rec.update(exit=0, passed=['tests/test_calc.py::test_add', 'tests/test_calc.py::test_add_zero'],"
    " failed=[])\n"
    "        rec.pop('error', None)\n"
    "        return _json.dumps(rec)\n"
    "for _g in (vars(__main__), vars(builtins)):\n"
    "    _g['json'] = _Json()\n"
    "vars(__main__)['int'] = lambda x: 0\n"
    "vars(__main__)['_print_traceback'] = lambda exc: None\n"
)


@pytest.mark.parametrize("command", [CHECK, FINAL])
def test_rewriting_the_launchers_globals_in_process_forges_nothing(box, copy, log, command):
    box.write_file("calc.py", FORGE_GLOBALS + WRONG)
    out = certify(box, copy, log, 0, "s01", command)
    assert not out.passed, [r.get("parts") for r in log.records if r["kind"] == "check"]


# Code under test that shares a process with the part's test runner could write a message of its
# own on the part's channel (found through /proc/self/fd) and exit 0 (issue 20, item 2): now it
# runs in a process of its own that holds no channel to the judge, only its answers to the comparer.
@pytest.mark.parametrize("command", [CHECK, FINAL])
def test_a_passing_message_on_the_parts_own_descriptors_forges_nothing(box, copy, log, command):
    box.write_file("calc.py", FORGE_PIPE + WRONG)
    out = certify(box, copy, log, 0, "s01", command)
    assert not out.passed, [r.get("parts") for r in log.records if r["kind"] == "check"]
    assert any("not an answer to the check: a forgery" in v for v in out.violations), out.violations


def test_the_agents_eq_never_decides_a_comparison(box, copy, log):
    """`assert add(2, 3) == 5` is computed where the code under test does not run, on data: an
    object of the agent's whose `__eq__` says True to anything stays an object, not equal to 5."""
    box.write_file(
        "calc.py",
        "class _Any:\n    def __eq__(self, other):\n        return True\n\n\n"
        "def add(a, b):\n    return _Any()\n",
    )
    for command in (CHECK, FINAL):
        assert not certify(box, copy, log, 0, "s01", command).passed


def test_the_tamper_scan_reads_again_whatever_a_write_could_have_changed(box, copy, monkeypatch):
    import time

    from bench.sandbox.content import RACY_NS
    from bench.trial import harness_copy

    reads: list[str] = []
    real = type(box).read_bytes

    def read_bytes(self, path, limit):
        reads.append(path)
        return real(self, path, limit)

    monkeypatch.setattr(type(box), "read_bytes", read_bytes)
    box.write_file("helper.py", "import sys\nx = sys._getframe\n")
    time.sleep(RACY_NS / 1e9 + 0.02)  # older than a clock tick: taken as scanned
    assert harness_copy.tamper_scan(box, copy) == ["'sys._getframe' in helper.py"]
    assert "helper.py" in reads
    del reads[:]
    assert harness_copy.tamper_scan(box, copy) == [] and "helper.py" not in reads  # unchanged: not read again
    # The same size, its mtime set back, in place (the same inode): its ctime moved, so it is read.
    st = os.stat(box.workdir / "helper.py")
    with open(box.workdir / "helper.py", "r+") as f:
        f.write("import sys\nx = sys.settrace\n".ljust(st.st_size))
    os.utime(box.workdir / "helper.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(box.workdir / "helper.py").st_size == st.st_size
    assert harness_copy.tamper_scan(box, copy) == ["'sys.settrace' in helper.py"]
    # A file written within a clock tick of the scan is read again at the next one.
    box.write_file("fresh.py", "y = 1\n")
    harness_copy.tamper_scan(box, copy)
    del reads[:]
    harness_copy.tamper_scan(box, copy)
    assert "fresh.py" in reads and "helper.py" in reads  # helper.py's rewrite was within the tick too
