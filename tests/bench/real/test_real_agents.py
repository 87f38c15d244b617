"""External agents in front of the real local model (issue 41 item 6): SmolLM2-135M under
llama-server with a 4,096-token window, behind the model proxy, through the whole harness
(Docker sandbox, MLflow, event log). What a real model does behind an agent is the agent's:

* mini-swe-agent's fixed overhead (its system prompt and one `bash` tool) fits the window, so its
  requests reach the server, which counts them itself, and the trial ends with a verdict;
* Claude Code's does not (its system prompt and tool list are ~24k tokens): the proxy refuses its
  first request as over the window, and that is Claude Code's context overflow, an agent failure,
  counted, never an infrastructure failure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.agents.install import cache_root, installed, spec_named
from bench.config import ConfigError
from bench.core.outcomes import AGENT, INFRA, SUCCESS
from bench.eventlog.verify import verify
from bench.local.server import LlamaServer
from tests.bench.real.conftest import CTX
from tests.bench.real.test_real_trials import calls, real_trial

pytestmark = [pytest.mark.docker, pytest.mark.real]


def _require(agent: str) -> None:
    try:
        installed(spec_named(agent))
    except ConfigError as exc:
        if (
            os.environ.get("CTXBENCH_REQUIRE_DOCKER") == "1"
        ):  # make test installs it (scripts/ensure_agents.sh)
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(f"{exc} ({cache_root()})")


def _requests(records: list[dict]) -> list[dict]:
    return [r for r in records if r["kind"] == "agent_request" and r["thread"] == "main"]


def test_mini_swe_agent_plays_against_the_real_model(
    llama: LlamaServer, tmp_path: Path, monkeypatch, docker_ready
):
    _require("mini_swe_agent")
    _, result, records, _ = real_trial(llama, tmp_path, monkeypatch, "agent=mini_swe_agent")
    assert result.outcome_class in (SUCCESS, AGENT), (result.failure_reason, result.outcome_class)
    assert result.outcome_class != INFRA and not result.skipped
    _, problems = verify(result.events_path)
    assert problems == []
    requests, mc = _requests(records), calls(records)
    assert requests and requests[0]["window"] == CTX
    assert 0 < requests[0]["overhead"] < CTX  # mini's own prefix fits the window
    assert len(mc) == len(requests)  # every request reached the server
    for c in mc:  # counted by the server, not estimated
        assert c["usage_estimated"] is False
        assert c["usage"]["input"] + c["usage"]["cache_read"] + c["usage"]["cache_write"] > 0
    # its commands ran in the sandbox through the harness, each logged with its result
    ran = [r for r in records if r["kind"] == "tool_call"]
    assert ran and len(ran) == len([r for r in records if r["kind"] == "tool_result"])


def test_a_window_below_claude_codes_overhead_is_its_context_overflow(
    llama: LlamaServer, tmp_path: Path, monkeypatch, docker_ready
):
    _require("claude_code")
    _, result, records, _ = real_trial(llama, tmp_path, monkeypatch, "agent=claude_code")
    assert (result.failure_reason, result.outcome_class) == ("context_overflow", AGENT)
    assert not result.skipped
    first = _requests(records)[0]
    assert first["window"] == CTX < first["overhead"] < first["tokens"]  # its fixed prefix alone is over
    refused = [r for r in records if r["kind"] == "context_overflow"]
    assert refused and refused[0]["tokens"] == first["tokens"] and refused[0]["window"] == CTX
    assert calls(records) == []  # refused at the proxy: nothing reached the server
    end = records[-1]
    assert end["kind"] == "trial_end" and end["outcome_class"] == AGENT
    assert not [r for r in records if r["kind"] == "error" and r.get("reason") == "harness_error"]
    replies = [r for r in records if r["kind"] == "agent_reply"]
    assert replies and replies[0]["status"] == 400 and "too long" in json.dumps(refused[0]["detail"])
