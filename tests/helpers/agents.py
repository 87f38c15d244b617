"""What the tests of the external agents and what they talk through share (tests/bench/agents/,
tests/bench/real/, the proxy's and the dialects' tests): the agent's composed spec, the install
they need (or the reason they cannot run), one trial played through the step driver with its
outcome read back, an event log opened for a model proxy, a model recording what a dialect
passes on."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bench.agents.install import cache_root, installed
from bench.agents.spec import AgentSpec
from bench.config import ConfigError, compose
from bench.core import outcomes
from bench.eventlog.writer import EventLog
from bench.trial.driver import Limits, StepDriver
from ctxlog import events as ev

SEED = 7000  # the seed `play` logs, which verify hashes the trial's requests with


def agent_spec(agent: str, **over: object) -> AgentSpec:
    """conf/agent/<agent>.yaml as composed, with top-level keys of `over` replaced."""
    d = OmegaConf.to_container(compose([f"agent={agent}"]).agent, resolve=True)
    assert isinstance(d, dict)
    return AgentSpec.from_dict({**d, **over})


def require_installed(spec: AgentSpec) -> AgentSpec:
    """`spec`, its agent installed in the cache. Missing, the test fails under make test (which
    installs every agent: scripts/ensure_agents.sh) and is skipped elsewhere, naming the fix."""
    try:
        installed(spec)
    except ConfigError as exc:
        if os.environ.get("CTXBENCH_REQUIRE_DOCKER") == "1":
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(f"{exc} ({cache_root()})")
    return spec


class Recorder:
    """A model behind an agent's dialect: answers from `replies` in order and keeps what each
    request showed it (messages, tools), so a test reads what the dialect passed on."""

    model_id = "sim"

    def __init__(self, replies):
        self.replies, self.seen = list(replies), []

    def complete(self, messages, tools, **kw):
        self.seen.append((messages, tools))
        return self.replies.pop(0)


def started_log(path: Path, seed: int) -> EventLog:
    """An event log at `path` opened as an agent's trial opens it (its TrialStart written), for
    a model proxy to record into."""
    log = EventLog(path)
    log.append(
        ev.TrialStart(
            trial_id="t",
            task_id="x",
            strategy="agent",
            arm="baseline",
            seed=seed,
            max_output=4096,
            schema=ev.SCHEMA,
        )
    )
    return log


def play(task, sandbox, log: EventLog, player, drift: bool, **limits) -> str:
    """One trial of `task` played by `player` in `sandbox`, logged to `log` (closed after): the
    reason it failed, "" when it succeeded. `limits` replace the driver's defaults."""
    log.append(
        ev.TrialStart(
            trial_id="t",
            task_id=task.task_id,
            strategy="agent",
            arm="drift",
            seed=SEED,
            max_output=8192,
            base_commit=sandbox.base_commit,
            schema=ev.SCHEMA,
        )
    )
    settings = {
        "max_turns": 200,
        "max_turns_per_step": 16,
        "deadline": time.monotonic() + 1200,
        "drift": drift,
        **limits,
    }
    try:
        StepDriver(task, sandbox, log, Limits(**settings)).run(player)
        return ""
    except outcomes.TrialFailed as exc:
        return exc.reason
    finally:
        log.close()
