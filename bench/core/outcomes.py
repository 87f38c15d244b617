"""How a trial ends: one table from failure reason to outcome class (docs/threat_model.md).

    agent_failure           the model's own doing: MLflow FINISHED, success 0, counted in the analysis
    infrastructure_failure  ours (sandbox, provider, harness): MLflow FAILED, excluded, rerun on resume
    interrupted             killed from outside (Ctrl-C, SIGTERM): MLflow KILLED, rerun on resume

The loop and the runner raise the exception classes below; the runner writes the class as the
`outcome_class` run tag, so `analysis/` (which never imports the harness) classifies the same
way. Pure data and plain exceptions: imports nothing, so every floor may use it.
"""

from __future__ import annotations

SUCCESS = "success"
AGENT = "agent_failure"
INFRA = "infrastructure_failure"
INTERRUPTED = "interrupted"

REASONS: dict[str, str] = {
    # Agent failures: whatever a model does, including being too slow or too long-winded. A
    # strategy that makes trials slow or overflow must not be excused by an exclusion.
    "step_failed": AGENT,  # a step not certified within its turn budget
    "final_check_failed": AGENT,  # every step certified, the final acceptance check not
    "turn_budget": AGENT,  # limits.max_turns used up
    "timeout": AGENT,  # limits.trial_timeout_s, the trial's wall budget
    "context_overflow": AGENT,  # the built context exceeds the window, or the provider says so
    "output_truncation": AGENT,  # a reply cut at max_tokens
    "model_error": AGENT,  # the model stopped with stop_reason error / refusal
    "content_error": AGENT,  # what the agent put in its working copy defeated a host-side
    # operation (bench/sandbox/content.py: too deep, git refused it)
    "uncertified_tree": AGENT,  # the working copy after a check, or a step's commit, is not the
    # tree the judge certified (bench/trial/certified_tree.py)
    "resource_exhausted": AGENT,  # the agent's processes took the sandbox's memory until its
    # container died of it (bench/sandbox/docker.py)
    # Infrastructure failures: nothing the model did explains them.
    "sandbox_lost": INFRA,  # the container or the engine went away
    "provider_error": INFRA,  # the provider failed after its retries
    "harness_error": INFRA,  # a bug of ours, or the disk/database under us
    "interrupted": INTERRUPTED,
}

MLFLOW_STATUS = {SUCCESS: "FINISHED", AGENT: "FINISHED", INFRA: "FAILED", INTERRUPTED: "KILLED"}
STATUS_TAG = {SUCCESS: "success", AGENT: "failure", INFRA: "error", INTERRUPTED: "killed"}


def outcome_class(reason: str) -> str:
    """The class of a failure reason ("" = no failure = success)."""
    if not reason:
        return SUCCESS
    if reason not in REASONS:
        raise ValueError(f"unknown failure reason {reason!r}; known: {', '.join(REASONS)}")
    return REASONS[reason]


class TrialFailed(Exception):
    """A trial cannot go on; `reason` is a key of REASONS. Raise `failure(reason)` to get the
    subclass of its class."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail

    @property
    def outcome_class(self) -> str:
        return outcome_class(self.reason)


class AgentFailure(TrialFailed):
    """The model failed: a verdict, counted."""


class InfraFailure(TrialFailed):
    """Our infrastructure failed: no verdict, the trial is excluded and rerun."""


class TrialTimeout(AgentFailure):
    """The trial's wall budget ran out (raised by the watchdog inside a stuck call; it must be
    constructible without arguments, as an asynchronous exception is)."""

    def __init__(
        self, detail: str = "watchdog: the trial was stuck inside one call past its wall-clock limit"
    ) -> None:
        super().__init__("timeout", detail)


def failure(reason: str, detail: str = "") -> TrialFailed:
    """The exception for `reason`, of the class the table gives it."""
    cls = {AGENT: AgentFailure, INFRA: InfraFailure}.get(outcome_class(reason), TrialFailed)
    return cls(reason, detail)


class Verdict:
    """A trial's verdict as it forms: success until the first failure, which is kept. Later
    failures are returned as not taken (the caller logs them); none ever restores success."""

    def __init__(self) -> None:
        self.reason = ""
        self.detail = ""

    def fail(self, reason: str, detail: str = "") -> bool:
        outcome_class(reason)  # an unknown reason is a bug: fail loudly here, not in the analysis
        if self.reason:
            return False
        self.reason, self.detail = reason, detail
        return True

    @property
    def outcome_class(self) -> str:
        return outcome_class(self.reason)

    @property
    def success(self) -> bool:
        return not self.reason

    @property
    def status(self) -> str:
        """The `status` run tag: success | failure | error | killed."""
        return STATUS_TAG[self.outcome_class]

    @property
    def mlflow_status(self) -> str:
        return MLFLOW_STATUS[self.outcome_class]
