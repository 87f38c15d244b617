"""One table from a provider's error reply to the outcome (bench/providers/http/errors.py), on the
replies Anthropic, OpenAI, vLLM, Ollama and llama.cpp send for a context overflow, a rate limit,
an overload, an auth failure, a bad request and a server error, each sent by the loopback
server (bench/serve/errors.py) and read through the vendor's SDK (OpenAI's for the compatible
servers)."""

from __future__ import annotations

import pytest

from bench.core.outcomes import outcome_class
from bench.core.toolspecs import TOOLS
from bench.providers.base import ContextOverflow, ProviderError
from bench.providers.http import errors
from bench.serve import errors as bodies
from bench.serve.server import FaultPlan, LoopbackServer
from tests.helpers.serve_support import CONVERSATION, ScriptedBackend, Sleeps, make

pytestmark = pytest.mark.usefixtures("api_keys")


@pytest.mark.parametrize("vendor", bodies.VENDORS)
@pytest.mark.parametrize("case", bodies.CASES)
def test_each_vendors_error_reply_gets_its_outcome(vendor, case):
    kind = bodies.EXPECTED_KIND[case]
    sdk = "anthropic" if vendor == "anthropic" else "openai"
    with LoopbackServer(ScriptedBackend(), faults=[f"error:{vendor}:{case}"]) as srv:
        p = make(sdk, srv, sleep=Sleeps(), max_retries=2)
        try:
            with pytest.raises(ProviderError) as info:
                p.complete(CONVERSATION[:2], TOOLS, max_tokens=64, seed=1)
        finally:
            p.close()
        attempts = len(srv.calls)
    message = str(info.value)
    assert kind in message, message
    assert attempts == (3 if errors.RETRIED[kind] else 1), (attempts, message)
    # The trial's reason: a context overflow is the agent's (its context), all else infrastructure.
    overflow = isinstance(info.value, ContextOverflow)
    assert overflow == (case == "overflow"), message
    reason = "context_overflow" if overflow else "provider_error"
    assert outcome_class(reason) == ("agent_failure" if case == "overflow" else "infrastructure_failure")


def test_the_table_reads_the_body_before_the_status():
    # Ollama says "context" with a 500; a 400 about a context window is an overflow, not a bad request.
    assert errors.kind_of(500, "input length exceeds the context length").kind == "context_overflow"
    assert (
        errors.kind_of(400, "request (9 tokens) exceeds the available context size (8 tokens)").retryable
        is False
    )
    assert errors.kind_of(429, "You exceeded your current quota").kind == "quota"
    assert errors.kind_of(404, "model not found").kind == "bad_request"
    assert errors.kind_of(None, "anything") is None


def test_an_unknown_vendor_error_is_refused_in_one_line():
    with pytest.raises(ValueError, match="use error:VENDOR:CASE"):
        FaultPlan(["error:acme:overflow"])
