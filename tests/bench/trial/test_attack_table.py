"""attack_table.verdict reads each row as docs/threat_model.md says it must end: a guarded attack
"held" only when nothing of test_adversary.check fails, an unguarded one "won" only on its own
evidence, and anything else names what went wrong (no Docker: observations as adversary_run
prints them)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.bench.trial.attack_table import table, verdict


def _held(**changes: Any) -> dict[str, Any]:
    obs = {
        "attack": "noop",
        "uid": 0,
        "agent": "own",
        "agent_turns": 0,
        "mlflow_status": "FINISHED",
        "outcome_class": "agent_failure",
        "success": 0.0,
        "failure_reason": "step_failed",
        "policy_violations": 0.0,
        "violation_events": 0,
        "violations": [],
        "errors": [],
        "metrics": {"processes_killed": 0.0, "tool_errors": 0.0},
        "containers_left": [],
        "output": "",
        "events": "/nonexistent",
        "host_processes_left": [],
        "checks_passed": [],
        "scratch_left": [],
        "guard_removed": "",
        "won": "",
    }
    return {**obs, **changes}


@pytest.mark.parametrize("agent", ["own", "mini_swe_agent"])
def test_a_guarded_attack_that_ended_as_the_agents_failure_with_nothing_left_held(agent):
    assert verdict(_held(agent=agent)) == "held"


@pytest.mark.parametrize("agent", ["own", "mini_swe_agent"])
@pytest.mark.parametrize(
    "change",
    [
        {"success": 1.0},
        {"outcome_class": "harness_error"},
        {"mlflow_status": "FAILED"},
        {"containers_left": ["abc"]},
        {"scratch_left": ["ctxbench-sbx-1"]},
        {"host_processes_left": ["123 git"]},
        {"errors": ["boom"]},
        {"attack": "judge_channel", "checks_passed": [1]},
    ],
)
def test_a_guarded_attack_that_won_anything_did_not_hold(agent, change):
    assert verdict(_held(agent=agent, **change)).startswith("NOT HELD")


def test_ctxbenchs_own_loop_is_held_to_every_expectation_of_the_suite():
    assert verdict(_held(violation_events=1, policy_violations=1.0, violations=["x"])).startswith("NOT HELD")


def test_an_unguarded_attack_won_only_on_its_evidence_and_a_crash_is_never_read_well():
    assert verdict(_held(guard_removed="emitted.carry", won="3 messages no provider can send")) == "won"
    assert verdict(_held(guard_removed="emitted.carry", won="")) == "NOT WON"
    assert verdict({"attack": "noop", "uid": 0, "crash": "OSError: x"}) == "CRASH"


def test_the_table_counts_its_verdicts():
    tally = table([_held(), _held(), _held(success=1.0)]).rstrip().splitlines()[-1]
    assert tally.startswith("3 attacks: 2 held, 1 NOT HELD: "), tally


@pytest.mark.parametrize(("attack", "flood"), [("huge_args", 13 << 20), ("large_args", 8_200_000)])
def test_a_flooding_attack_won_only_where_its_log_outgrew_the_values_stored_once(attack, flood, tmp_path):
    from tests.bench.trial.unguard import won

    events = tmp_path / "events.jsonl"
    events.write_bytes(b"x" * (flood // 3))  # each value once: what the blob store leaves
    assert won(attack, _held(attack=attack, events=str(events))) == ""
    events.write_bytes(b"x" * flood)
    assert won(attack, _held(attack=attack, events=str(events))).startswith("events.jsonl ")


def test_behind_another_agent_git_paths_never_reaches_host_git_whatever_its_output_says():
    from tests.bench.trial.unguard import HOST_FILE_ORACLE, won

    seen = _held(attack="git_paths", output=f"exit=1\nerror: {HOST_FILE_ORACLE}")
    assert won("git_paths", seen) == "host git named a host file"
    assert won("git_paths", {**seen, "agent": "mini_swe_agent"}) == ""  # the sandbox's git, about the sandbox


def test_behind_another_agent_a_reply_past_its_bound_is_the_models_error_for_large_args_only():
    assert verdict(_held(agent="mini_swe_agent", attack="large_args", failure_reason="model_error")) == "held"
    assert verdict(_held(agent="mini_swe_agent", failure_reason="model_error")) == "NOT HELD: reason"
