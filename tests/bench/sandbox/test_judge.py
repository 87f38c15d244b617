"""The judge and the judged in the Docker sandbox (bench/sandbox/judge.py): agent commands and
the code under test run as another uid than pid 1 and the certification's launcher, so they
can neither signal, ptrace nor read the memory of either; certification runs on a read-only
copy of the committed tree. Each guard attacked from `run` and from code a check imports."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from bench.eventlog.writer import EventLog
from bench.sandbox.base import SandboxConfig
from bench.sandbox.docker import DockerSandbox, create
from bench.sandbox.judge import AGENT_UID, PROBE_END, fill, probed
from bench.trial.certify import HarnessCopy, certify
from tests.bench.trial.conftest import CALC, CHECK, FILES, FINAL, tiny_task

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_ready")]

# What an agent tries on a process it wants to take over: every answer is printed as one JSON
# line. ptrace(PTRACE_ATTACH) and process_vm_readv through libc; /proc/PID/mem; a signal.
PROBE = r"""
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
out = {}
for pid in [int(p) for p in sys.argv[1:]]:
    r = libc.ptrace(16, pid, None, None)  # PTRACE_ATTACH
    out[f"ptrace {pid}"] = "ok" if r == 0 else errno.errorcode[ctypes.get_errno()]
    if r == 0:
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    class IOV(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    buf = ctypes.create_string_buffer(8)
    local, remote = IOV(ctypes.cast(buf, ctypes.c_void_p), 8), IOV(0x400000, 8)
    r = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    out[f"vm_readv {pid}"] = "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
    try:
        open(f"/proc/{pid}/mem", "rb").close()
        out[f"mem {pid}"] = "ok"
    except OSError as e:
        out[f"mem {pid}"] = errno.errorcode[e.errno]
    try:
        os.kill(pid, 0)
        out[f"signal {pid}"] = "ok"
    except OSError as e:
        out[f"signal {pid}"] = errno.errorcode[e.errno]
print(json.dumps(out))
"""
DENIED = {"EPERM", "EACCES", "ESRCH"}


@pytest.fixture
def sb(sandbox_cfg: SandboxConfig) -> Iterator[DockerSandbox]:
    s = create(sandbox_cfg, FILES, "judge-test")
    yield s
    s.close()


def _answers(output: str) -> dict[str, str]:
    return json.loads(output.strip().splitlines()[-1])


def test_agent_commands_run_as_another_uid_without_capabilities(sb: DockerSandbox) -> None:
    res = sb.exec("id -u; grep -E '^Cap(Eff|Prm)' /proc/self/status; awk '/^Uid/{print $2}' /proc/1/status")
    lines = res.output.split()
    assert lines[0] == str(AGENT_UID) != "0" and lines[-1] == "0", res.output  # pid 1 is the judge's
    assert lines[2] == lines[4] == "0000000000000000", res.output
    assert sb.exec("id -u", judge=True).output.strip() == "0"


def test_run_cannot_trace_read_or_signal_pid_1(sb: DockerSandbox) -> None:
    sb.write_file("probe.py", PROBE)
    res = sb.exec("python3 probe.py 1", reap=True)
    answers = _answers(res.output)
    assert set(answers.values()) <= DENIED, answers
    sb.exec("kill -9 1; kill -STOP 1", reap=True)
    assert sb.exec("echo alive").output == "alive\n"


def test_code_a_check_imports_cannot_reach_the_judge_or_pid_1(sb: DockerSandbox, tmp_path) -> None:
    """calc.py, imported by the check, attacks its parent (the launcher, the judge) and pid 1,
    and prints what it got into the check's output."""
    attack = (
        "import os, subprocess, sys\n"
        f"_r = subprocess.run([sys.executable, '-c', {PROBE!r}, str(os.getppid()), '1'], "
        "capture_output=True, text=True)\n"
        "print('ANSWERS', _r.stdout.strip() or _r.stderr[-300:])\n"
    )
    sb.write_file("calc.py", attack + CALC)
    out = certify(sb, HarnessCopy(tiny_task()), EventLog(tmp_path / "e.jsonl"), 0, "s01", CHECK)
    answers = json.loads(out.output.split("ANSWERS ", 1)[1].splitlines()[0])
    assert len(answers) == 8 and set(answers.values()) <= DENIED, answers
    assert out.passed, out.output  # the check itself still judges the code


def test_a_check_runs_on_a_read_only_copy_of_the_committed_tree(sb: DockerSandbox, tmp_path) -> None:
    """An ignored module the check would import is not there; nothing can be written into the
    copy (so no bytecode); the working copy is not where the check runs."""
    sb.write_file(".gitignore", "helper.py\n")
    sb.write_file("helper.py", CALC)
    sb.write_file("calc.py", "from helper import add\n")
    sb.write_file("tests_probe.py", "")
    log = EventLog(tmp_path / "e.jsonl")
    out = certify(sb, HarnessCopy(tiny_task()), log, 0, "s01", CHECK)
    assert not out.passed and "ModuleNotFoundError" in out.output, out.output
    sb.write_file("calc.py", "import os\nopen('written', 'w')\n" + CALC)
    out = certify(sb, HarnessCopy(tiny_task()), log, 0, "s01", FINAL)
    assert not out.passed and "Read-only file system" in out.output, out.output


def test_stale_pytest_rewrite_bytecode_is_never_loaded(sb: DockerSandbox, tmp_path) -> None:
    """pytest's assertion-rewriting import hook (not Python's) loads __pycache__/*-pytest-*.pyc
    of any module named like a test when its recorded size and mtime match the source (pytest
    7, the image's): right code compiled by pytest in a `run`, wrong source of the same size
    and mtime put back."""
    right, wrong = "def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a - b\n"
    sb.write_file("test_support.py", right)
    sb.write_file("calc.py", "from test_support import add\n")
    path = sb.workdir / "test_support.py"
    os.utime(path, (946684800, 946684800))
    res = sb.exec("env -u PYTHONDONTWRITEBYTECODE python3 -m pytest -q -p no:cacheprovider tests", reap=True)
    assert "2 passed" in res.output and list((sb.workdir / "__pycache__").glob("test_support*-pytest-*.pyc"))
    sb.write_file("test_support.py", wrong)
    os.utime(path, (946684800, 946684800))
    out = certify(sb, HarnessCopy(tiny_task()), EventLog(tmp_path / "e.jsonl"), 0, "s01", FINAL)
    assert not out.passed and "failed" in out.output, out.output


def test_the_judges_copy_never_changes_what_a_link_of_the_agents_points_at(tmp_path) -> None:
    # The tree may hold the agent's links (git commits them): `up -> <a host directory>`. Writing
    # the copy must not follow one, not even to set a mode (the harness may be root).
    host = tmp_path / "host-private"
    host.mkdir()
    os.chmod(host, 0o700)
    (host / "secret").write_text("s")
    os.chmod(host / "secret", 0o600)
    entries = {"up": ("link", str(host).encode()), "pkg/mod.py": ("file", b"x = 1\n"), "deep": ("link", b"/")}
    tree = fill(tmp_path / "judge", entries)
    assert (tree / "up").is_symlink() and (tree / "pkg" / "mod.py").read_text() == "x = 1\n"
    assert oct(host.stat().st_mode & 0o777) == oct(0o700)
    assert oct((host / "secret").stat().st_mode & 0o777) == oct(0o600)
    assert sorted(os.listdir(host)) == ["secret"]


@pytest.mark.parametrize(
    "lines, completed",
    [
        (["probe a", "report x"], True),  # no end line: the probe was cut short
        (["probe a", f"probe {PROBE_END}", "probe b"], True),  # output after the end: not the probe's end
        (["probe a", f"probe {PROBE_END}"], False),  # a wrapper that never reached its sentinel
        ([], True),  # never reached
    ],
)
def test_a_probe_reads_as_clean_only_when_it_and_its_wrapper_ran_to_the_end(lines, completed) -> None:
    assert probed(["probe a", f"probe {PROBE_END}"], True) == "a"
    first, second = probed(lines, completed), probed(lines, completed)
    assert first.startswith("(probe failed: ") and first != second  # equals no recorded state
