"""LocalSandbox (UNSAFE backend) and the backend-independent parts of the sandbox contract.

No Docker needed: this file always runs.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bench.sandbox import Sandbox, SandboxConfig, create
from bench.sandbox.base import OutputTail
from bench.sandbox.local import LocalSandbox
from tests.helpers.configs import sandbox_config, trial_config

REPO = Path(__file__).resolve().parents[3]
FILES = {
    "README.md": "# demo\n",
    "pkg/__init__.py": "",
    "pkg/core.py": "def add(a, b):\n    return a + b\n",
    "tests/test_core.py": "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}


@pytest.fixture(scope="module")
def local_cfg() -> SandboxConfig:
    return sandbox_config("local")


@pytest.fixture
def sb(local_cfg: SandboxConfig) -> Iterator[LocalSandbox]:
    box = create(local_cfg, FILES, "local-test")
    assert isinstance(box, LocalSandbox)
    yield box
    box.close()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


# -- config ------------------------------------------------------------------------------------
def test_both_group_files_validate(local_cfg: SandboxConfig, sandbox_cfg: SandboxConfig) -> None:
    assert (local_cfg.kind, sandbox_cfg.kind) == ("local", "docker")
    assert local_cfg.model_dump() == {**sandbox_cfg.model_dump(), "kind": "local"}  # local extends docker


def test_every_knob_is_stated_once_and_the_yaml_keeps_only_its_kind_and_image() -> None:
    """The schema states each knob with a one-line doc; docker.yaml names the kind and the image
    (scripts/build_image.sh reads it), local.yaml extends it and names its kind."""
    for name, field in SandboxConfig.model_fields.items():
        assert field.description and "\n" not in field.description, name
    docker = yaml.safe_load((REPO / "conf" / "sandbox" / "docker.yaml").read_text())
    assert docker.pop("defaults") == ["/knobs/sandbox@_here_", "_self_"]
    assert set(docker) == {"kind", "image", "base_image"}
    assert yaml.safe_load((REPO / "conf" / "sandbox" / "local.yaml").read_text()) == {
        "defaults": ["docker", "_self_"],
        "kind": "local",
    }
    composed = trial_config("sandbox=docker").sandbox
    assert set(composed) == set(SandboxConfig.model_fields)
    assert type(composed["exec_timeout_s"]) is int  # as the YAML had it: the config hash stays


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "podman"}, "sandbox.kind: not one of docker, local"),
        ({"memory": "lots"}, 'sandbox.memory: a docker memory size like "512m" or "2g"'),
        ({"pids_limit": True}, "sandbox.pids_limit: Input should be a valid integer"),
        ({"pids_limit": 2.5}, "sandbox.pids_limit: Input should be a valid integer"),
        ({"pids_limit": 8}, "sandbox.pids_limit: Input should be greater than or equal to 16"),
        ({"cpus": 0}, "sandbox.cpus: Input should be greater than or equal to 0.01"),
        ({"exec_timeout_s": "10"}, "sandbox.exec_timeout_s: Input should be a valid number"),
        (
            {"output_limit_chars": 10},
            "sandbox.output_limit_chars: Input should be greater than or equal to 200",
        ),
        ({"image": " "}, "sandbox.image: String should have at least 1 character"),
        ({"reuse": "yes"}, "sandbox.reuse: Input should be a valid boolean"),
        ({"colour": "red"}, "sandbox.colour: unknown key 'colour'"),
    ],
)
def test_bad_config_is_one_line_naming_the_key(
    sandbox_cfg: SandboxConfig, change: dict, message: str
) -> None:
    d = {**sandbox_cfg.model_dump(), **change}
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        SandboxConfig.from_dict(d)
    assert "conf/sandbox" in str(err.value) and "\n" not in str(err.value)


def test_a_knob_left_out_takes_the_schemas_default_and_the_kind_is_required(
    sandbox_cfg: SandboxConfig,
) -> None:
    d = sandbox_cfg.model_dump()
    del d["pids_limit"]
    assert SandboxConfig.from_dict(d).pids_limit == 256
    assert SandboxConfig.from_dict({**d, "pids_limit": 512.0}).pids_limit == 512  # a whole float is that int
    del d["kind"]
    with pytest.raises(ValueError, match=re.escape("sandbox.kind: missing; set it in conf/sandbox")):
        SandboxConfig.from_dict(d)


# -- output truncation -------------------------------------------------------------------------
def test_output_tail_keeps_the_end_and_counts_the_cut() -> None:
    text = "".join(f"line {i} ü€😀\n" for i in range(50000))
    data = text.encode()
    tail = OutputTail(500)
    for i in range(0, len(data), 997):  # chunks that split multi-byte characters
        tail.feed(data[i : i + 997])
    assert len(tail._buf) < 20_000  # memory stays bounded however long the output
    out = tail.text()
    marker, kept = out.split("\n", 1)
    assert len(out) <= 500 and text.endswith(kept) and len(kept) > 400
    cut = int(re.search(r"first (\d+) characters", marker).group(1))  # type: ignore[union-attr]
    assert cut == len(text) - len(kept)
    small = OutputTail(500)
    small.feed("short ü\n".encode())
    assert small.text() == "short ü\n"


# -- the local backend -------------------------------------------------------------------------
def test_local_is_flagged_unsafe(local_cfg: SandboxConfig, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        box = create(local_cfg, FILES, "local-warn")
    box.close()
    assert isinstance(box, Sandbox)
    assert any("UNSAFE" in r.getMessage() for r in caplog.records)
    assert "UNSAFE" in (LocalSandbox.__doc__ or "")


def test_exec_runs_in_the_working_copy(sb: LocalSandbox) -> None:
    r = sb.exec("pwd; cat README.md; echo err >&2; exit 4")
    assert r.exit_code == 4 and not r.timed_out
    assert r.output == f"{sb.workdir}\n# demo\nerr\n"
    r = sb.exec("python -m pytest -q -p no:cacheprovider tests")
    assert r.exit_code == 0 and "1 passed" in r.output, r.output


def test_the_judge_channel_is_fd_3_and_apart_from_the_output(sb: LocalSandbox) -> None:
    r = sb.exec("echo 'report {}' >&3; echo out; echo err >&2", judge=True)
    assert (r.exit_code, r.output, r.report) == (0, "out\nerr\n", "report {}\n")
    assert sb.exec("echo x >&3").exit_code != 0  # no channel outside a judge exec


# Run in a child interpreter: it takes over fd 3, which in a pytest worker may be xdist's channel.
_FD3_CLOSED_AT_FORK = """
import os, subprocess, sys
from bench.config import compose
from bench.sandbox import SandboxConfig, create

real = subprocess._fork_exec

def another_thread_closed_fd_3_first(*args):
    os.close(3)
    return real(*args)

box = create(SandboxConfig.from_dict(compose(["sandbox=local"]).sandbox), {"a.txt": "a"}, "fd3")
subprocess._fork_exec = another_thread_closed_fd_3_first
try:
    for _ in range(3):
        os.dup2(os.open(os.devnull, os.O_RDONLY), 3)  # fd 3 open while the exec makes its pipes
        r = box.exec("echo 'report {}' >&3; cat a.txt", judge=True)
        print(repr((r.exit_code, r.output, r.report)))
finally:
    box.close()
"""


def test_a_judge_exec_does_not_depend_on_the_harness_fd_3(tmp_path: Path) -> None:
    """Trials in threads share a process: another trial may close whatever the harness's fd 3 is
    between this exec's pipes and its fork. The judge's channel must not be named by that number."""
    proc = subprocess.run(
        [sys.executable, "-c", _FD3_CLOSED_AT_FORK], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [repr((0, "a", "report {}\n"))] * 3


def test_exec_does_not_leak_host_environment(sb: LocalSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value")
    out = sb.exec("env").output
    assert "sk-secret-value" not in out and "ANTHROPIC_API_KEY" not in out


def test_timeout_kills_the_command_and_escapees(sb: LocalSandbox) -> None:
    t0 = time.monotonic()
    r = sb.exec("setsid sleep 31 & echo $! > escaped.pid; sleep 30", timeout=1)
    assert time.monotonic() - t0 < 15.0  # the 1 s timeout, not the 30 s sleep
    assert r.timed_out and r.exit_code == 137
    pid = int(sb.read_file("escaped.pid"))
    deadline = time.monotonic() + 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def test_background_jobs_do_not_block_and_die_at_close(local_cfg: SandboxConfig) -> None:
    box = create(local_cfg, FILES, "local-bg")
    t0 = time.monotonic()
    r = box.exec("sleep 60 & echo $!", timeout=30)
    assert time.monotonic() - t0 < 15 and r.exit_code == 0 and not r.timed_out  # not the 60 s job
    pid = int(r.output)
    assert _alive(pid)
    box.close()
    deadline = time.monotonic() + 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid) and not box.workdir.exists()


def test_default_timeout_and_truncation_come_from_config(local_cfg: SandboxConfig) -> None:
    # 3 s: long enough for `seq` on a loaded machine (0.5 s timed it out under CI's three workers)
    box = create(
        local_cfg.model_copy(update={"exec_timeout_s": 3.0, "output_limit_chars": 300}), FILES, "local-cfg"
    )
    try:
        assert box.exec("sleep 30").timed_out
        r = box.exec("seq 1 100000")
        assert len(r.output) <= 300 and r.output.endswith("99999\n100000\n") and "truncated" in r.output
    finally:
        box.close()


def test_path_rules_and_symlinks(sb: LocalSandbox) -> None:
    assert sb.exec("ln -s /etc/passwd x && ln -s /etc d && ln -s ../README.md pkg/r").exit_code == 0
    for bad in ("x", "d/passwd", "pkg/r", "../x", "/etc/passwd", ".git/HEAD", "pkg/../../x"):
        with pytest.raises(ValueError):
            sb.read_file(bad)
    with pytest.raises(ValueError):
        sb.write_file("d/ctxbench-pwned", "x")
    with pytest.raises(FileNotFoundError):
        sb.read_file("nope.txt")
    assert not Path("/etc/ctxbench-pwned").exists()
    assert sb.exec("test -e .git").exit_code == 1


def test_file_ops_listing_commit_and_tree(local_cfg: SandboxConfig) -> None:
    a, b = create(local_cfg, FILES, "local-a"), create(local_cfg, FILES, "local-b")
    try:
        assert a.base_commit == b.base_commit
        assert a.tree_sha() == b.tree_sha() == a.git("rev-parse", "HEAD^{tree}").strip()
        t0 = a.tree_sha()
        a.write_file("src/new.py", "X = 1\n")
        a.exec("mkdir -p src/__pycache__ && touch src/__pycache__/new.cpython-311.pyc")
        assert a.list_files() == sorted([*FILES, "src/new.py"])
        assert a.tree_sha() != t0
        b.write_file("src/new.py", "X = 1\n")
        assert a.tree_sha() == b.tree_sha()
        assert a.commit("add new", "Agent <a@x.org>") == b.commit("add new", "Agent <a@x.org>")
        assert a.commit("read from the git dir", "Agent <a@x.org>") == a._git("rev-parse", "HEAD").strip()
        a.delete_file("src/new.py")
        assert "src/new.py" not in a.list_files() and a.tree_sha() == t0
        assert "D  src/new.py" not in a.git("status", "--porcelain")  # nothing staged by tree_sha
    finally:
        a.close()
        b.close()
    assert not a.workdir.exists() and not b.workdir.exists()
    a.close()  # idempotent
