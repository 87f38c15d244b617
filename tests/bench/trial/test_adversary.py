"""The adversarial agent suite through the real Docker sandbox: `model=adversary model.attack=X`
on a short real task. Every attack must end as an agent failure with success 0 and its
policy violations logged, never crash the harness, leave no container and touch nothing on the
host. The attacks are bench/providers/attacks.py; docs/threat_model.md maps each to its guard."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench.config import compose, load
from bench.core.outcomes import AGENT
from bench.providers.attacks import ATTACKS
from bench.trial.runner import run

pytestmark = pytest.mark.docker

# attack -> (policy violations: exact int, or a (min, None) range), extra metric minimums
EXPECT: dict[str, tuple[int | tuple[int, None], dict[str, int]]] = {
    "noop": (0, {}),
    "traversal": (14, {}),  # every file-tool call of the script is one refused path
    "run_overwrite": ((2, None), {}),
    "background": ((1, None), {"processes_killed": 2}),
    "exit_on_import": ((1, None), {}),
    "forged_report": ((1, None), {}),
    "injection": ((2, None), {}),
    "outside_writes": (8, {}),
    "fork_bomb": (0, {"processes_killed": 1}),
    "network": (0, {}),
    "kill_all": (0, {}),
    "mistakes": (0, {"tool_errors": 12}),
    # The judge and the judged (issue 20): each must fail without a guard having to notice it.
    "ptrace_pid1": (0, {}),
    "ptrace_from_check": (0, {}),
    "forged_globals": (0, {}),
    # the pytest-rewritten .pyc names `_pytest`: the tamper scan's one finding. (Only the final
    # acceptance runs pytest, which this script never reaches: sandbox/test_judge.py attacks that.)
    "stale_rewrite_pyc": (1, {}),
}
# What the attack itself saw, in its tool results and check outputs: the takeover was refused.
SEEN = {"ptrace_pid1": ("ptrace 1: EPERM", "signal 1: EPERM"), "ptrace_from_check": ("ptrace 1: EPERM",)}
HOST_PROBES = [Path("/etc/ctxbench-pwned"), Path("/ctxbench-pwned"), Path("/tmp/ctxbench-pwned"),
               Path("/tmp/ctxbench-host-probe"), Path("/tmp/sitecustomize.py"),
               Path.home() / ".local/lib/python3.11/site-packages/zz.pth"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("adversary")


def test_every_attack_has_an_expectation():
    assert set(EXPECT) == set(ATTACKS)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attack_fails_as_the_agents_own_failure(attack, results, monkeypatch, docker_ready):
    present = [p for p in HOST_PROBES if p.exists()]
    monkeypatch.setenv("CTXBENCH_RESULTS", str(results))
    tcfg = load(compose(["model=adversary", f"model.attack={attack}", "task.size.steps=6",
                         f"limits.max_turns_per_step={len(ATTACKS[attack]) + 1}", f"study.name=adv-{attack}",
                         "resume=false"]))
    result = run(tcfg)
    from mlflow.tracking import MlflowClient

    mrun = MlflowClient(tcfg.tracking.uri).get_run(result.run_id)
    m, tags = mrun.data.metrics, mrun.data.tags
    assert (mrun.info.status, tags["outcome_class"], m["success"]) == ("FINISHED", AGENT, 0.0), tags
    records = [json.loads(line) for line in result.events_path.read_text().splitlines()]
    assert not [r for r in records if r["kind"] == "error"], "the harness never fails on an attack"
    want, minimums = EXPECT[attack]
    violations = [r for r in records if r["kind"] == "policy_violation"]
    assert m["policy_violations"] == len(violations)
    if isinstance(want, int):
        assert len(violations) == want, [v["detail"] for v in violations]
    else:
        assert len(violations) >= want[0], [v["detail"] for v in violations]
    text = json.dumps([r for r in records if r["kind"] in ("tool_result", "check")])
    for seen in SEEN.get(attack, ()):
        assert seen in text, seen
    assert ": ok" not in text or attack not in SEEN, "a takeover call succeeded"
    for key, least in minimums.items():
        assert m[key] >= least, (key, m[key])
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=ctxbench.run_id={result.run_id}"],
                          capture_output=True, text=True, check=True).stdout
    assert left.strip() == ""
    assert [p for p in HOST_PROBES if p.exists()] == present  # the host is untouched
