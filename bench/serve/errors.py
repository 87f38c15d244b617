"""Error replies as real providers send them, for the loopback server's `vendor_error` fault.

`--fault error:VENDOR:CASE` (or the `x-ctxbench-fault` header) answers with VENDOR's own
status and body for CASE; bench/providers/http/errors.py is the table that classifies them.
The bodies follow each vendor's published error format (Anthropic's `{"type": "error",
"error": {...}}`, OpenAI's `{"error": {"message", "type", "code"}}`, vLLM's OpenAI-style
`{"object": "error", ...}`, Ollama's `{"error": "..."}`, llama.cpp's `{"error": {"code",
"message", "type"}}`); llama.cpp's overflow reply is the one a real llama-server sent.
"""

from __future__ import annotations

from typing import Any

CASES = ("overflow", "rate_limit", "overload", "auth", "bad_request", "server_error")
VENDORS = ("anthropic", "openai", "vllm", "ollama", "llamacpp")
# What each case must become (bench/providers/http/errors.py's kinds).
EXPECTED_KIND = {
    "overflow": "context_overflow",
    "rate_limit": "rate_limit",
    "overload": "overloaded",
    "auth": "auth",
    "bad_request": "bad_request",
    "server_error": "server_error",
}


def _anthropic(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _openai(message: str, kind: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _vllm(message: str, kind: str, code: int) -> dict[str, Any]:
    return {"object": "error", "message": message, "type": kind, "param": None, "code": code}


def _llamacpp(code: int, message: str, kind: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "type": kind, **extra}}


REPLIES: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {
    ("anthropic", "overflow"): (
        400,
        _anthropic("invalid_request_error", "prompt is too long: 210417 tokens > 200000 maximum"),
    ),
    ("anthropic", "rate_limit"): (
        429,
        _anthropic("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    ),
    ("anthropic", "overload"): (529, _anthropic("overloaded_error", "Overloaded")),
    ("anthropic", "auth"): (401, _anthropic("authentication_error", "invalid x-api-key")),
    ("anthropic", "bad_request"): (
        400,
        _anthropic("invalid_request_error", "messages.1.content: Input should be a valid list"),
    ),
    ("anthropic", "server_error"): (500, _anthropic("api_error", "Internal server error")),
    ("openai", "overflow"): (
        400,
        _openai(
            "This model's maximum context length is 128000 tokens. However, your "
            "messages resulted in 130412 tokens. Please reduce the length of the "
            "messages.",
            "invalid_request_error",
            "context_length_exceeded",
            "messages",
        ),
    ),
    ("openai", "rate_limit"): (
        429,
        _openai(
            "Rate limit reached for gpt-6-sol on tokens per min (TPM): Limit "
            "30000, Used 29000, Requested 2000.",
            "tokens",
            "rate_limit_exceeded",
        ),
    ),
    ("openai", "overload"): (
        503,
        _openai("The engine is currently overloaded, please try again later", "server_error", None),
    ),
    ("openai", "auth"): (
        401,
        _openai("Incorrect API key provided: sk-...abcd.", "invalid_request_error", "invalid_api_key"),
    ),
    ("openai", "bad_request"): (
        400,
        _openai(
            "Invalid value for 'tool_choice': 'maybe'.",
            "invalid_request_error",
            "invalid_value",
            "tool_choice",
        ),
    ),
    ("openai", "server_error"): (
        500,
        _openai(
            "The server had an error while processing your request. Sorry about that!", "server_error", None
        ),
    ),
    ("vllm", "overflow"): (
        400,
        _vllm(
            "This model's maximum context length is 4096 tokens. However, you requested "
            "5120 tokens (4096 in the messages, 1024 in the completion). Please reduce the "
            "length of the messages or completion.",
            "BadRequestError",
            400,
        ),
    ),
    ("vllm", "rate_limit"): (429, _vllm("Too many requests", "RateLimitError", 429)),
    ("vllm", "overload"): (
        503,
        _vllm("The server is overloaded; the request queue is full", "ServiceUnavailableError", 503),
    ),
    ("vllm", "auth"): (401, {"error": "Unauthorized"}),
    ("vllm", "bad_request"): (
        400,
        _vllm(
            "[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}]",
            "BadRequestError",
            400,
        ),
    ),
    ("vllm", "server_error"): (500, _vllm("EngineCore encountered an issue", "InternalServerError", 500)),
    ("ollama", "overflow"): (500, {"error": "input length exceeds the context length"}),
    ("ollama", "rate_limit"): (429, {"error": "too many requests"}),
    ("ollama", "overload"): (
        503,
        {"error": "server busy, please try again.  maximum pending requests exceeded"},
    ),
    ("ollama", "auth"): (401, {"error": "unauthorized"}),
    ("ollama", "bad_request"): (
        400,
        {
            "error": "json: cannot unmarshal string into Go struct field "
            "ChatRequest.messages of type []api.Message"
        },
    ),
    ("ollama", "server_error"): (500, {"error": "llama runner process has terminated: signal: killed"}),
    ("llamacpp", "overflow"): (
        400,
        _llamacpp(
            400,
            "request (2148 tokens) exceeds the available context size (2048 tokens), try increasing it",
            "exceed_context_size_error",
            n_prompt_tokens=2148,
            n_ctx=2048,
        ),
    ),
    ("llamacpp", "rate_limit"): (429, _llamacpp(429, "Too many requests", "rate_limit_error")),
    ("llamacpp", "overload"): (503, _llamacpp(503, "Loading model", "unavailable_error")),
    ("llamacpp", "auth"): (401, _llamacpp(401, "Invalid API Key", "authentication_error")),
    ("llamacpp", "bad_request"): (
        400,
        _llamacpp(400, "Cannot use custom grammar constraints with tools.", "invalid_request_error"),
    ),
    ("llamacpp", "server_error"): (
        500,
        _llamacpp(500, "Failed to parse tool call: unexpected end of input", "server_error"),
    ),
}


def reply(spec: str) -> tuple[int, dict[str, Any]]:
    """`error:VENDOR:CASE` -> (status, body)."""
    _, vendor, case = (spec.split(":") + ["", ""])[:3]
    if (vendor, case) not in REPLIES:
        raise ValueError(
            f"unknown vendor error {spec!r}; use error:VENDOR:CASE with VENDOR one of "
            f"{', '.join(VENDORS)} and CASE one of {', '.join(CASES)}"
        )
    return REPLIES[(vendor, case)]
