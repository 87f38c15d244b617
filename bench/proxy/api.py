"""The three wire APIs the model proxy serves, each decoded into harness messages and answered
from a harness `Completion` through the codecs of bench/providers/wire/ (the loopback server's
own), and each with its provider's refusal of an over-window request, byte for byte.

    api = APIS[api_for(path)]                 # anthropic | openai_chat | openai_responses
    req = api.decode(body)                    # messages, tools, max_tokens, stream
    status, ctype, data = api.reply(completion, model, stream, rid)
    status, ctype, data = api.refusal(tokens, window)

A reply's ids come from the caller (`reply_id`: the request's sha, the trial's seed and the
proxy's count of replies) and its `created` stamp is the fixed CREATED, so the same trial with the
same seeds sends the same bytes and records the same `agent_reply` (docs/design.md §12 rule 6).

The refusal texts are the providers' own: Claude Code parses Anthropic's with
`prompt is too long[^0-9]*(\\d+)\\s*tokens?\\s*>\\s*(\\d+)` and compacts (docs/agents.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench.core.types import Completion, Message, ToolSpec
from bench.providers.wire import anthropic as aw
from bench.providers.wire import openai as ow
from bench.providers.wire import responses as rw

JSON = "application/json"
SSE = "text/event-stream"
DEFAULT_MAX_TOKENS = 4096
CREATED = 1_700_000_000  # every reply's `created`: a clock here would make two runs of a trial differ


@dataclass(frozen=True)
class Request:
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    max_tokens: int
    stream: bool
    model: str


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


def _sse(events: Any) -> bytes:
    return "".join(
        f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n" for name, data in events
    ).encode()


def reply_id(body_sha: str, seed: int, n: int) -> str:
    """A reply's id from what determines it: the request's bytes, the trial's seed and the
    proxy's count of replies (two identical requests still get two ids)."""
    return hashlib.sha256(f"{seed}:{n}:{body_sha}".encode()).hexdigest()[:24]


class Anthropic:
    name = "anthropic"

    @staticmethod
    def decode(body: Mapping[str, Any]) -> Request:
        messages, _ = aw.from_wire(body)
        max_tokens = body.get("max_tokens")
        return Request(
            tuple(messages),
            aw.tools_from_wire(body.get("tools")),
            max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else DEFAULT_MAX_TOKENS,
            bool(body.get("stream")),
            str(body.get("model") or ""),
        )

    @staticmethod
    def reply(c: Completion, model: str, stream: bool, rid: str) -> tuple[int, str, bytes]:
        mid = f"msg_{rid}"
        if stream:
            return 200, SSE, _sse(aw.sse_events(c, model, mid))
        return 200, JSON, _dumps(aw.message_json(c, model, mid))

    @staticmethod
    def error(status: int, kind: str, message: str) -> tuple[int, str, bytes]:
        return status, JSON, _dumps({"type": "error", "error": {"type": kind, "message": message}})

    @classmethod
    def refusal(cls, tokens: int, window: int) -> tuple[int, str, bytes]:
        return cls.error(
            400, "invalid_request_error", f"prompt is too long: {tokens} tokens > {window} maximum"
        )


class OpenAIChat:
    name = "openai_chat"

    @staticmethod
    def decode(body: Mapping[str, Any]) -> Request:
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        return Request(
            tuple(ow.from_wire(body)),
            ow.tools_from_wire(body.get("tools")),
            limit if isinstance(limit, int) and limit > 0 else DEFAULT_MAX_TOKENS,
            bool(body.get("stream")),
            str(body.get("model") or ""),
        )

    @staticmethod
    def reply(
        c: Completion, model: str, stream: bool, rid: str, include_usage: bool = True
    ) -> tuple[int, str, bytes]:
        cid, created = f"chatcmpl-{rid}", CREATED
        if not stream:
            return 200, JSON, _dumps(ow.completion_json(c, model, cid, created))
        lines = [
            f"data: {json.dumps(d, ensure_ascii=False)}\n\n"
            for d in ow.sse_chunks(c, model, cid, created, include_usage)
        ]
        return 200, SSE, "".join([*lines, "data: [DONE]\n\n"]).encode()

    @staticmethod
    def error(
        status: int, kind: str, message: str, code: str | None = None, param: str | None = None
    ) -> tuple[int, str, bytes]:
        return (
            status,
            JSON,
            _dumps({"error": {"message": message, "type": kind, "param": param, "code": code}}),
        )

    @classmethod
    def refusal(cls, tokens: int, window: int) -> tuple[int, str, bytes]:
        return cls.error(
            400,
            "invalid_request_error",
            f"This model's maximum context length is {window} tokens. However, your messages resulted "
            f"in {tokens} tokens. Please reduce the length of the messages.",
            "context_length_exceeded",
            "messages",
        )


class OpenAIResponses:
    name = "openai_responses"

    @staticmethod
    def decode(body: Mapping[str, Any]) -> Request:
        return Request(
            tuple(rw.from_wire(body)),
            rw.tools_from_wire(body.get("tools")),
            rw.max_tokens(body, DEFAULT_MAX_TOKENS),
            bool(body.get("stream")),
            str(body.get("model") or ""),
        )

    @staticmethod
    def reply(c: Completion, model: str, stream: bool, rid: str) -> tuple[int, str, bytes]:
        created = CREATED
        if stream:
            return 200, SSE, _sse(rw.sse_events(c, model, rid, created))
        return 200, JSON, _dumps(rw.response_json(c, model, rid, created))

    error = OpenAIChat.error

    @classmethod
    def refusal(cls, tokens: int, window: int) -> tuple[int, str, bytes]:
        # The Responses API's own wording names no figures; the code is what clients test.
        return cls.error(
            400,
            "invalid_request_error",
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "context_length_exceeded",
            "input",
        )


API = Anthropic | OpenAIChat | OpenAIResponses
APIS: dict[str, type[Anthropic] | type[OpenAIChat] | type[OpenAIResponses]] = {
    a.name: a for a in (Anthropic, OpenAIChat, OpenAIResponses)
}


def api_for(path: str) -> str | None:
    """The API a request path belongs to (with or without a `/v1` prefix), or None."""
    path = path.rstrip("/")
    if path.endswith("/messages/count_tokens"):
        return "anthropic_count"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "openai_chat"
    if path.endswith("/responses"):
        return "openai_responses"
    return None
