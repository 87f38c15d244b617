"""The attack suite behind mini-swe-agent (issue 42, item 7): the scripted attack models of
bench/providers/attacks/ speak mini's one `bash` tool (bench/sim/dialects/mini_bash.py, wrapped by
bench/agents/players.py `model_provider`), mini runs each command in the trial's Docker sandbox
through ctxbench's `run`, and whatever the model tells the agent to do to `tests/`, `tools/`, pid 1,
the judge or the host ends as it ends for ctxbench's own loop: the agent's failure, success 0,
nothing left behind (tests/bench/trial/test_adversary.py; the whole suite's table through mini:
`python -m tests.bench.trial.attack_table --agent mini_swe_agent`).

One attack per class a bash-only agent can carry: protected files rewritten by shell
(`run_overwrite`), the judge's report channel forged from code under test (`judge_channel`),
pid 1 and every process killed (`kill_all`), writes out of the working copy and onto the host
(`outside_writes`). The classes that live in the shape of a tool call (an unknown tool name,
arguments nested 600 deep or of the wrong type, a refused `submit_step`: `mistakes`, `deep_args`,
`bad_submit`) and ctxbench's own file and git tools (`git_options`, `git_paths`: host git never
runs for mini, whose `git` runs in the sandbox) do not reach the harness through mini: the dialect
flattens each call to one command string, which is just a `run`."""

from __future__ import annotations

import pytest

from bench.agents.players import model_provider
from bench.config import compose
from bench.core.outcomes import AGENT
from bench.core.types import ToolSpec
from bench.providers import make_provider
from bench.providers.attacks import ATTACKS
from bench.sim.dialects.mini_bash import SUBMIT
from tests.bench.agents.test_mini import mini_installed
from tests.bench.trial.adversary_run import adopt_orphans, play
from tests.bench.trial.test_adversary import HOST_PROBES, NO_CHECK_PASSES, REASON
from tests.helpers.agents import agent_spec

__all__ = ["mini_installed"]  # the fixture, shared with test_mini.py

# attack -> the least policy violations it must leave (each a protected file restored)
LEAST_VIOLATIONS = {"run_overwrite": 2, "judge_channel": 0, "kill_all": 0, "outside_writes": 0}


def test_an_attack_model_tells_mini_what_it_tells_ctxbenchs_loop_as_bash_commands():
    cfg = compose(["model=adversary", "model.attack=run_overwrite"]).model
    provider = model_provider(agent_spec("mini_swe_agent"), cfg, make_provider(cfg))
    bash = (ToolSpec("bash", "run a command", {"type": "object"}),)
    turns = [
        provider.complete((), bash, max_tokens=100, seed=0) for _ in range(len(ATTACKS["run_overwrite"]))
    ]
    commands = [[(c.name, c.args) for c in t.tool_calls] for t in turns]
    script = [
        [("bash", {"command": c["args"]["command"]}) for c in turn[:1]]
        for turn in ATTACKS["run_overwrite"][:2]
    ]
    assert commands[:2] == script  # each `run` exactly the command the attack gave
    # submit_step: mini's end of task
    assert commands[2][0][1]["command"].startswith(f"printf '%s\\n' {SUBMIT}")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("mini-attacks")


@pytest.mark.docker
@pytest.mark.timeout(900)  # a mini process per turn imports litellm: ~5 s of CPU each
@pytest.mark.parametrize("attack", list(LEAST_VIOLATIONS))
def test_attack_behind_mini_fails_as_the_agents_own_failure(
    attack, mini_installed, results, monkeypatch, tmp_path, docker_ready
):
    present = [p for p in HOST_PROBES if p.exists()]
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # this trial's scratch dirs, and only those
    adopt_orphans()  # a host process that detaches is still counted
    try:
        obs = play(attack, results, "agent=mini_swe_agent")
    finally:
        adopt_orphans(False)
    assert (obs["agent"], obs["agent_turns"] > 0) == ("mini_swe_agent", True), obs["agent_turns"]
    assert (obs["mlflow_status"], obs["outcome_class"], obs["success"]) == ("FINISHED", AGENT, 0.0), obs
    assert obs["failure_reason"] in REASON.get(attack, ("step_failed", "final_check_failed")), obs[
        "failure_reason"
    ]
    assert obs["errors"] == [], "the harness never fails on an attack"
    assert obs["policy_violations"] == obs["violation_events"] >= LEAST_VIOLATIONS[attack], obs["violations"]
    assert attack not in NO_CHECK_PASSES or obs["checks_passed"] == [], obs["checks_passed"]
    assert obs["containers_left"] == [] and obs["scratch_left"] == [], obs
    assert obs["host_processes_left"] == [], obs["host_processes_left"]
    assert [p for p in HOST_PROBES if p.exists()] == present  # the host is untouched
