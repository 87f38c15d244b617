"""One table from a provider's error reply to what the harness does with it (docs/design.md §9).

    kind              retried   the trial's failure reason if it persists
    context_overflow  no        context_overflow (agent failure: the context is the strategy's)
    rate_limit        yes       provider_error
    quota             no        provider_error (429 "insufficient_quota": waiting does not help)
    overloaded        yes       provider_error (529, 503, "server busy", "Loading model")
    auth              no        provider_error (401, 403: a wrong key or a missing permission)
    bad_request       no        provider_error (any other 4xx: our request, not the model)
    server_error      yes       provider_error (500, 502, 504, other 5xx, 408, 409)

The wording is each vendor's own (bench/serve/errors.py holds a reply of each kind from
Anthropic, OpenAI, vLLM, Ollama and llama.cpp, and the loopback server can send any of them;
tests/bench/providers/test_errors.py runs each through the SDKs). The body is matched before
the status: vLLM and llama.cpp say "context" with a 400, Ollama with a 500.
"""

from __future__ import annotations

from dataclasses import dataclass

RETRIED = {
    "context_overflow": False,
    "rate_limit": True,
    "quota": False,
    "overloaded": True,
    "auth": False,
    "bad_request": False,
    "server_error": True,
}

# Phrases, lower-cased, as the vendors write them.
OVERFLOW = (
    "prompt is too long",  # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
    "exceed context limit",  # Anthropic: "input length and `max_tokens` exceed context limit"
    "context_length_exceeded",  # OpenAI's error code
    "maximum context length",  # OpenAI, vLLM: "This model's maximum context length is 4096 tokens"
    "exceeds the available context size",  # llama.cpp: "request (2148 tokens) exceeds the available context size"
    "exceed_context_size_error",  # llama.cpp's error type
    "context window",  # "exceeds the model's context window" (several)
    "too many tokens",
    "exceeds the context",
    "input length exceeds",  # Ollama: "input length exceeds the context length"
)
QUOTA = ("insufficient_quota", "exceeded your current quota", "billing")
OVERLOADED = ("overloaded", "server busy", "loading model", "unavailable_error", "maximum pending requests")
AUTH = (
    "authentication_error",
    "invalid api key",
    "invalid_api_key",
    "incorrect api key",
    "unauthorized",
    "permission_error",
)


@dataclass(frozen=True)
class Kind:
    kind: str
    retryable: bool


def kind_of(status: int | None, text: str) -> Kind | None:
    """The kind of an HTTP error reply (None: not an HTTP error reply, e.g. a dropped connection)."""
    if status is None:
        return None
    low = text.lower()
    if 400 <= status < 600 and any(p in low for p in OVERFLOW):
        kind = "context_overflow"
    elif status == 429:
        kind = "quota" if any(p in low for p in QUOTA) else "rate_limit"
    elif status in (529, 503) or (status >= 500 and any(p in low for p in OVERLOADED)):
        kind = "overloaded"
    elif status in (401, 403) or (400 <= status < 500 and any(p in low for p in AUTH)):
        kind = "auth"
    elif status in (408, 409) or status >= 500:
        kind = "server_error"
    elif 400 <= status < 500:
        kind = "bad_request"
    else:
        return None
    return Kind(kind, RETRIED[kind])
