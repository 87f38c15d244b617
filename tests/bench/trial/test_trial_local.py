"""Whole trials on the host (LocalSandbox, the scripted model, the tiny task): how a trial ends.

Each outcome of bench.core.outcomes, reached the way a real trial reaches it, with MLflow
status, tags and the event log checked; and cleanup that holds when recording itself fails.
"""

from __future__ import annotations

import dataclasses
import errno
import json

import pytest

from bench.core.outcomes import AGENT, INFRA, INTERRUPTED, SUCCESS
from bench.providers.base import ContextOverflow
from bench.providers.scripted import ScriptedProvider
from bench.sandbox.base import SandboxLost
from bench.sandbox.local import LocalSandbox
from tests.bench.trial.conftest import SOLVE, kinds, mlflow_run


def _verdict(result, tcfg):
    run = mlflow_run(tcfg, result.run_id)
    return (
        run.info.status,
        run.data.tags["outcome_class"],
        run.data.metrics["success"],
        run.data.tags["failure_reason"],
    )


def test_a_solved_task_is_a_success(scripted_trial):
    result, tcfg = scripted_trial(SOLVE)
    assert _verdict(result, tcfg) == ("FINISHED", SUCCESS, 1.0, "")
    assert result.success and result.outcome_class == SUCCESS
    (check, final) = kinds(result.events_path, "check")
    assert check["passed"] and final["passed"] and final["step"] == "final"
    assert kinds(result.events_path, "policy_violation") == []


def test_doing_nothing_is_an_agent_failure(scripted_trial):
    result, tcfg = scripted_trial([[{"name": "submit_step", "args": {"notes": "n"}}]])
    assert _verdict(result, tcfg) == ("FINISHED", AGENT, 0.0, "step_failed")


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        (["limits.max_turns=1"], "turn_budget"),
        (["limits.trial_timeout_s=0.001"], "timeout"),
    ],
)
def test_the_turn_and_wall_budgets_are_agent_failures(scripted_trial, overrides, reason):
    result, tcfg = scripted_trial([[{"name": "list_files", "args": {}}]] * 5, *overrides)
    assert _verdict(result, tcfg) == ("FINISHED", AGENT, 0.0, reason)


def test_a_provider_context_overflow_is_an_agent_failure(scripted_trial, monkeypatch):
    def overflow(self, *a, **k):
        raise ContextOverflow("anthropic model x: context_overflow after 1 attempt(s): prompt is too long")

    monkeypatch.setattr(ScriptedProvider, "complete", overflow)
    result, tcfg = scripted_trial(SOLVE)
    assert _verdict(result, tcfg) == ("FINISHED", AGENT, 0.0, "context_overflow")
    assert kinds(result.events_path, "context_overflow")


def test_a_sandbox_lost_after_the_final_check_passed_is_not_a_success(scripted_trial, monkeypatch):
    def lost(self):
        raise SandboxLost("the container went away after the final check")

    monkeypatch.setattr(LocalSandbox, "tree_sha", lost)
    result, tcfg = scripted_trial(SOLVE)
    assert _verdict(result, tcfg) == ("FAILED", INFRA, 0.0, "sandbox_lost")
    assert kinds(result.events_path, "trial_end")[0]["success"] is False


def test_the_first_failure_is_kept_and_a_later_one_is_logged(scripted_trial, monkeypatch):
    def lost(self):
        raise SandboxLost("gone")

    monkeypatch.setattr(LocalSandbox, "tree_sha", lost)
    result, tcfg = scripted_trial([])
    assert _verdict(result, tcfg) == ("FINISHED", AGENT, 0.0, "step_failed")
    (later,) = kinds(result.events_path, "error")
    assert later["reason"] == "sandbox_lost" and later["kept"] is False


def _cleaned(scripted_trial) -> bool:
    """Every sandbox the trial made is closed and its working copy removed."""
    return bool(scripted_trial.sandboxes) and all(
        s._closed and not s.workdir.exists() for s in scripted_trial.sandboxes
    )


def test_a_full_disk_while_logging_still_cleans_up_and_leaves_no_run_running(scripted_trial, monkeypatch):
    from bench.eventlog.writer import EventLog

    real, calls = EventLog.append, []

    def append(self, kind, *a, **k):
        calls.append(kind)
        if len(calls) > 12:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, kind, *a, **k)

    monkeypatch.setattr(EventLog, "append", append)
    result, tcfg = scripted_trial(SOLVE)
    assert _verdict(result, tcfg) == ("FAILED", INFRA, 0.0, "harness_error")
    assert _cleaned(scripted_trial)


def test_mlflow_failing_to_take_the_verdict_still_ends_the_run_failed(scripted_trial, monkeypatch):
    from bench.tracking.runs import TrialRun

    def broken(self, *a, **k):
        raise RuntimeError("database is locked")

    monkeypatch.setattr(TrialRun, "finish", broken)
    result, tcfg = scripted_trial(SOLVE)
    run = mlflow_run(tcfg, result.run_id)
    assert run.info.status == "FAILED" and run.data.tags["failure_reason"] == "harness_error"
    assert result.outcome_class == INFRA and not result.success
    assert _cleaned(scripted_trial)


def test_an_interrupt_ends_the_run_killed_removes_the_sandbox_and_propagates(scripted_trial, monkeypatch):
    def interrupt(self, *a, **k):
        raise KeyboardInterrupt("signal 15")

    monkeypatch.setattr(ScriptedProvider, "complete", interrupt)
    with pytest.raises(KeyboardInterrupt):
        scripted_trial(SOLVE)
    from mlflow.tracking import MlflowClient

    from bench.config import compose, load

    tcfg = load(compose(["sandbox=local"]))
    client = MlflowClient(tcfg.tracking.uri)
    run = client.search_runs(
        [client.get_experiment_by_name(tcfg.tracking.experiment).experiment_id],
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )[0]
    assert (run.info.status, run.data.tags["outcome_class"]) == ("KILLED", INTERRUPTED)
    assert _cleaned(scripted_trial)


def test_a_harness_bug_is_an_infrastructure_failure(scripted_trial, monkeypatch):
    from bench.trial import loop

    def bug(self, *a, **k):
        raise AttributeError("a bug of ours")

    monkeypatch.setattr(loop.LoopPlayer, "_refresh_files", bug)
    monkeypatch.setattr(loop.LoopPlayer, "_build", bug)
    result, tcfg = scripted_trial(SOLVE)
    assert _verdict(result, tcfg) == ("FAILED", INFRA, 0.0, "harness_error")


def test_every_figure_mlflow_holds_is_read_back_from_the_log(scripted_trial):
    """The loop keeps no counts: what MLflow records equals what the raw log lines say, counted
    here without the reader (a protected write, a tool mistake and a nudge included)."""
    script = [
        [{"name": "write_file", "args": {"path": "tests/test_calc.py", "content": "x = 1\n"}}],
        [{"name": "read_file", "args": {"path": "no/such.py"}}, {"name": "no_such_tool", "args": {}}],
        [],
        *SOLVE,
    ]
    result, tcfg = scripted_trial(script, "limits.max_turns_per_step=8")
    lines = [json.loads(line) for line in result.events_path.read_text().splitlines()]
    calls = [r for r in lines if r["kind"] == "model_call"]
    turns = [r for r in calls if r["purpose"] == "turn"]
    m = mlflow_run(tcfg, result.run_id).data.metrics
    count = {
        k: sum(r["kind"] == k for r in lines)
        for k in ("policy_violation", "tool_error", "compaction", "drift")
    }
    assert count["policy_violation"] >= 1 and count["tool_error"] >= 1  # the script did what it meant to
    assert m["policy_violations"] == count["policy_violation"] and m["tool_errors"] == count["tool_error"]
    assert m["compactions"] == count["compaction"] and m["drift_events"] == count["drift"]
    assert m["turns"] == len(turns) == result.turns and m["success"] == 1.0
    assert (
        m["steps_passed"] == sum(r["kind"] == "step_status" and r["status"] == "passed" for r in lines) == 1
    )
    prompt = sum(sum(r["usage"][k] for k in ("input", "cache_read", "cache_write")) for r in calls)
    assert m["tokens_input_total"] == prompt and m["tokens_output_total"] == sum(
        r["usage"]["output"] for r in calls
    )
    assert m["latency_s"] == sum(r["t"]["latency_s"] for r in calls)
    run_md = (result.events_path.parent / "RUN.md").read_text()  # RUN.md reads the same log
    assert "- [x] `s01`" in run_md and "steps passed: 1/1; turns: 5;" in run_md
    assert f"policy violations {count['policy_violation']}" in run_md


def test_a_model_id_changed_mid_trial_is_a_tag(scripted_trial, monkeypatch):
    """A provider may answer with another model than the one asked for (a fallback, a silent
    upgrade): the `model` tag is the configured identity, so the ids that answered are tagged."""
    real = ScriptedProvider.complete

    def switching(self, *args, **kwargs):
        reply = real(self, *args, **kwargs)
        return dataclasses.replace(reply, model_id="scripted-v2") if self.calls > 1 else reply

    monkeypatch.setattr(ScriptedProvider, "complete", switching)
    result, tcfg = scripted_trial(SOLVE)
    first = mlflow_run(tcfg, result.run_id).data.tags["model_ids"].split(",")
    assert len(first) == 2 and first[1] == "scripted-v2"


def test_one_model_id_adds_no_tag(scripted_trial):
    result, tcfg = scripted_trial(SOLVE)
    assert "model_ids" not in mlflow_run(tcfg, result.run_id).data.tags
