"""The one table from failure reason to outcome class, and the verdict that keeps the first reason."""

from __future__ import annotations

import pytest

from bench.core import outcomes as O


def test_every_reason_has_a_class_and_every_class_an_mlflow_status():
    assert set(O.REASONS.values()) == {O.AGENT, O.INFRA, O.INTERRUPTED}
    assert {O.MLFLOW_STATUS[c] for c in (O.SUCCESS, O.AGENT, O.INFRA, O.INTERRUPTED)} == {
        "FINISHED",
        "FAILED",
        "KILLED",
    }


@pytest.mark.parametrize(
    "reason",
    [
        "turn_budget",
        "timeout",
        "context_overflow",
        "step_failed",
        "final_check_failed",
        "output_truncation",
        "model_error",
        "content_error",
    ],
)
def test_the_models_own_failures_are_agent_failures(reason):
    exc = O.failure(reason, "x")
    assert isinstance(exc, O.AgentFailure) and exc.outcome_class == O.AGENT
    assert O.MLFLOW_STATUS[exc.outcome_class] == "FINISHED"


@pytest.mark.parametrize("reason", ["sandbox_lost", "provider_error", "harness_error"])
def test_infrastructure_failures_are_excluded(reason):
    exc = O.failure(reason)
    assert isinstance(exc, O.InfraFailure) and O.MLFLOW_STATUS[exc.outcome_class] == "FAILED"


def test_the_watchdog_exception_is_the_timeout_agent_failure():
    exc = O.TrialTimeout()
    assert exc.reason == "timeout" and isinstance(exc, O.AgentFailure)


def test_an_unknown_reason_is_a_bug():
    with pytest.raises(ValueError, match="unknown failure reason"):
        O.failure("flaky")
    with pytest.raises(ValueError):
        O.Verdict().fail("flaky")


def test_the_first_failure_is_kept_and_success_never_comes_back():
    v = O.Verdict()
    assert v.success and (v.status, v.mlflow_status, v.outcome_class) == ("success", "FINISHED", O.SUCCESS)
    assert v.fail("sandbox_lost", "after the final check")  # a failure after the loop replaces a success
    assert not v.success and (v.status, v.mlflow_status) == ("error", "FAILED")
    assert not v.fail("step_failed") and v.reason == "sandbox_lost"
    w = O.Verdict()
    w.fail("step_failed")
    assert not w.fail("sandbox_lost") and (w.reason, w.mlflow_status) == ("step_failed", "FINISHED")
