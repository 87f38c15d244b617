"""The adversarial agent suite through the real Docker sandbox: `model=adversary model.attack=X`
on a short real task. Every attack must end as an agent failure with success 0 and its
policy violations logged, never crash the harness, leave no container and no scratch
directory, and touch nothing on the host. The attacks are bench/providers/attacks/;
docs/threat_model.md maps each to its guard.

The suite runs twice when the tests run as root: in this process (the harness as root), and
as a non-root user in a process of its own (`adversary_run.py` under `setpriv`, with the
Docker socket's group): the guarantees must not depend on who runs the harness."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.core.outcomes import AGENT
from bench.providers.attacks import ATTACKS
from bench.sandbox.content import remove_tree
from tests.bench.trial.adversary_run import ROOT, as_user, interpreter, play

pytestmark = pytest.mark.docker

NON_ROOT = "ctxbench-nonroot"

# attack -> (policy violations: exact int, or a (min, None) range), extra metric minimums
EXPECT: dict[str, tuple[int | tuple[int, None], dict[str, int]]] = {
    "noop": (0, {}),
    # Every file-tool call of the script is one refused path; an absolute path is refused as a
    # mistake (a tool error), not counted as a violation (issue 21: a weak model writes `/tmp`).
    "traversal": (13, {"tool_errors": 1}),
    "run_overwrite": ((2, None), {}),
    "background": ((1, None), {"processes_killed": 2}),
    "exit_on_import": ((1, None), {}),
    "forged_report": ((1, None), {}),
    "injection": ((2, None), {}),
    "outside_writes": (6, {"tool_errors": 2}),  # + /etc/ctxbench-pwned and /etc/passwd: absolute, tool errors
    "fork_bomb": (0, {"processes_killed": 1}),
    "network": (0, {}),
    "kill_all": (0, {}),
    "mistakes": (0, {"tool_errors": 12}),
    # The judge and the judged (issue 20): each must fail without a guard having to notice it.
    "ptrace_pid1": (0, {}),
    "ptrace_from_check": (0, {}),
    "forged_globals": (0, {}),
    # the server (the code under test's process) ended with status 0 mid-check: logged, and the part failed
    "forged_pipe": ((1, None), {}),
    # the pytest-rewritten .pyc names `_pytest`: the tamper scan's one finding. (Only the final
    # acceptance runs pytest, which this script never reaches: sandbox/test_judge.py attacks that.)
    "stale_rewrite_pyc": (1, {}),
}
# -- issue 20: the harness's handling of the agent's content (bench/sandbox/content.py) -------
EXPECT.update(
    {
        "deep_tree": (0, {"tool_errors": 1}),  # the walk after the `run` refuses it; the check cannot run
        "bad_names": ((1, None), {}),  # tests/planted\xff.py, removed
        "huge_file": (0, {"tool_errors": 2}),  # edit_file and the walk after the `run` refuse it
        "gitattributes": (0, {}),
        "fifo": (0, {}),
        "git_options": (0, {"tool_errors": 24}),  # each refused before host git runs
        "perm_blind": ((1, None), {}),  # the restore after the `run`: both planted files, through mode 000
    }
)
# -- issue 42: what the model emits (bench/core/emitted.py) and git's own path handling ------
EXPECT.update(
    {
        "deep_args": (0, {"tool_errors": 2}),  # both calls refused where they entered, as tool errors
        "surrogates": (1, {"tool_errors": 1}),  # carried as `\udc80` text; the unknown tool a tool error; the
        # undecodable file name is not in the judge's copy: the uncertified tree is a violation, as bad_names
        "bad_submit": (0, {"tool_errors": 1}),  # the 5,000-character name: an unknown tool
        "huge_args": (0, {"tool_errors": 3}),  # each 2 MiB write refused, its log a 2,000-character excerpt
        "large_args": (0, {}),  # each 1 MB write carried, and stored once (test_adversary_unguarded.py)
        "long_command": (0, {"tool_errors": 1}),
        "git_paths": (10, {}),  # every way out, refused before host git runs
    }
)
OUTPUT_SEEN_42 = {
    "long_command": ("MAX_ARG_STRLEN",),
    "deep_args": ("nested deeper than",),
    "huge_args": ("arguments longer than",),
}
# -- issue 42: what the judge lends the agent (bench/providers/attacks/channel.py) -------------
EXPECT.update(
    {
        "judge_channel": (
            0,
            {"processes_killed": 1},
        ),  # no forged line is ever written: no guard has to notice one
        "oom_pid1": (0, {}),
    }
)
# bad_names: a file whose name is not UTF-8 is never in the judge's copy, so the tree recorded is
# not the tree certified (bench/trial/certified_tree.py). oom_pid1: the container's death by memory
# is the agent's where pid 1 cannot be kept from the OOM killer (an engine without
# CAP_SYS_RESOURCE), else it lives on. The others: the task not done.
REASON = {
    "deep_tree": ("content_error",),
    "huge_file": ("content_error",),
    "bad_names": ("uncertified_tree",),
    "surrogates": ("uncertified_tree",),  # its undecodable file name, as bad_names: not in the judge's copy
    "oom_pid1": ("resource_exhausted", "step_failed"),
}
SEEN = {"bad_names": ("tests/planted",), "perm_blind": ("tools/planted.py", "tests/conftest.py")}
# What the attack itself saw, in its tool results and check outputs: the takeover was refused.
# ptrace_from_check: the first step's check reads what it needs from the source (issue 42, item 3)
# and fails there on the missing module, so the planted module never runs in it; ptrace_pid1 keeps
# the EPERM evidence.
OUTPUT_SEEN = {
    "ptrace_pid1": ("ptrace 1: EPERM", "signal 1: EPERM"),
    "ptrace_from_check": ("remote/policy.py:1: ",),
    **OUTPUT_SEEN_42,
}
# In-process forgery: no check may pass, not even the first step's (a forged part once did).
NO_CHECK_PASSES = {"exit_on_import", "forged_report", "forged_globals", "forged_pipe", "judge_channel"}
HOST_PROBES = [
    Path("/etc/ctxbench-pwned"),
    Path("/ctxbench-pwned"),
    Path("/tmp/ctxbench-pwned"),
    Path("/tmp/ctxbench-host-probe"),
    Path("/tmp/sitecustomize.py"),
    Path("/tmp/ctxbench-git-out"),
    Path.home() / ".local/lib/python3.11/site-packages/zz.pth",
]


def check(attack: str, obs: dict[str, Any]) -> None:
    """What every attack must leave, root or not."""
    assert "crash" not in obs, obs
    assert (obs["mlflow_status"], obs["outcome_class"], obs["success"]) == ("FINISHED", AGENT, 0.0), obs
    assert obs["failure_reason"] in REASON.get(attack, ("step_failed", "final_check_failed")), obs[
        "failure_reason"
    ]
    assert obs["errors"] == [], "the harness never fails on an attack"
    want, minimums = EXPECT[attack]
    assert obs["policy_violations"] == obs["violation_events"]
    if isinstance(want, int):
        assert obs["violation_events"] == want, obs["violations"]
    else:
        assert obs["violation_events"] >= want[0], obs["violations"]
    for what in SEEN.get(attack, ()):  # found and removed, whoever runs the harness
        assert any(what in v for v in obs["violations"]), (what, obs["violations"])
    for seen in OUTPUT_SEEN.get(attack, ()):
        assert seen in obs["output"], seen
    assert attack not in OUTPUT_SEEN or ": ok" not in obs["output"], "a takeover call succeeded"
    assert attack not in NO_CHECK_PASSES or obs["checks_passed"] == [], obs["checks_passed"]
    for key, least in minimums.items():
        assert obs["metrics"][key] >= least, (key, obs["metrics"])
    assert obs["containers_left"] == [] and obs["scratch_left"] == [], obs
    assert obs["host_processes_left"] == [], obs["host_processes_left"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("adversary")


def test_every_attack_has_an_expectation():
    assert set(EXPECT) == set(ATTACKS)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attack_fails_as_the_agents_own_failure(attack, results, monkeypatch, tmp_path, docker_ready):
    present = [p for p in HOST_PROBES if p.exists()]
    monkeypatch.setenv("CTXBENCH_RESULTS", str(results))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # this trial's scratch dirs, and only those
    check(attack, play(attack, results))
    assert [p for p in HOST_PROBES if p.exists()] == present  # the host is untouched


# -- the same suite with the harness not running as root -------------------------------------
def _as_user() -> list[str]:
    pw = pwd.getpwnam(NON_ROOT)
    return as_user(pw.pw_uid, pw.pw_gid)


def _interpreter(env: dict[str, str]) -> list[str]:
    exe = interpreter(_as_user(), env)
    if exe is None:
        pytest.fail(f"no python the user {NON_ROOT} can run with this venv's packages ({sys.executable})")
    return exe


@pytest.fixture(scope="module")
def non_root(docker_ready) -> Iterator[dict[str, dict[str, Any]]]:
    if os.getuid() != 0:
        pytest.skip("the tests run as a non-root user already: the in-process suite is the non-root one")
    try:
        pwd.getpwnam(NON_ROOT)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", NON_ROOT], check=True
        )
    pw = pwd.getpwnam(NON_ROOT)
    home = Path(tempfile.mkdtemp(prefix="ctxbench-nonroot-"))  # pytest's own tmp is root's only
    os.chmod(home, 0o755)
    for sub in ("tmp", "results"):
        (home / sub).mkdir()
    for path in (home, home / "tmp", home / "results"):
        os.chown(path, pw.pw_uid, pw.pw_gid)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "USER": NON_ROOT,
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
    }
    cmd = [
        *_as_user(),
        *_interpreter(env),
        "-m",
        "tests.bench.trial.adversary_run",
        str(home / "results"),
        *ATTACKS,
    ]
    present = [p for p in HOST_PROBES if p.exists()]
    try:
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
        assert [p for p in HOST_PROBES if p.exists()] == present  # the host is untouched
        out = {o["attack"]: o for o in map(json.loads, proc.stdout.splitlines())}
        assert set(out) == set(ATTACKS), proc.stderr[-3000:]
        yield out
    finally:
        remove_tree(str(home))


@pytest.mark.timeout(1800)  # the fixture plays the whole suite in one process: bounded by its own timeout
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attack_fails_as_the_agents_own_failure_with_the_harness_not_root(attack, non_root):
    obs = non_root[attack]
    assert obs["uid"] != 0
    check(attack, obs)
