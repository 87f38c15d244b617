"""Harness messages <-> OpenAI Chat Completions wire format, both directions.

The provider uses `to_wire`, `usage_from_wire` and `ChunkAccumulator`; the loopback server uses
`from_wire`, `completion_json` and `sse_chunks`. `from_wire(to_wire(m))` gives back `m` exactly.

Usage: OpenAI's `prompt_tokens` *includes* `prompt_tokens_details.cached_tokens` (and
`cache_write_tokens` where reported); the harness's Usage is Anthropic-style, so
input = prompt_tokens - cached - cache_write. Compatible endpoints report the cached share
elsewhere: DeepSeek as `prompt_cache_hit_tokens`, Moonshot/Kimi as a top-level `cached_tokens`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from bench.core.emitted import parse_args
from bench.core.types import Completion, Message, Role, ToolCall, ToolSpec, Usage
from bench.providers.http.transport import StreamResult, TransientError
from bench.providers.wire.anthropic import text_piece, with_raw_calls

FINISH_FROM_WIRE = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
FINISH_TO_WIRE = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "refusal": "content_filter",
    "error": "stop",
}


def tools_to_wire(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def call_seed(trial_seed: int, call: int) -> int:
    """The sampling seed of a trial's `call`-th model call. A server such as llama.cpp or vLLM
    samples with the request's seed: one seed for every call of a trial made a retry after a
    nudge repeat its last reply word for word. Derived, so a rerun of the trial sends the same
    sequence."""
    return (trial_seed * 1_000_003 + call) % 2**31


def trial_seed(body: Mapping[str, Any]) -> int:
    """The trial's own seed, which the request carries as `user: "seed-<n>"` beside the per-call
    `seed` (the loopback server's sim draws with the trial's, as `model=sim` does); a request
    without it: its `seed`."""
    user = str(body.get("user") or "")
    if user.startswith("seed-") and user[5:].lstrip("-").isdigit():
        return int(user[5:])
    return int(body.get("seed") or 0)


def tools_from_wire(tools: Sequence[Mapping[str, Any]] | None) -> tuple[ToolSpec, ...]:
    fns = [t.get("function") or {} for t in tools or ()]
    return tuple(ToolSpec(f["name"], f.get("description", ""), f.get("parameters") or {}) for f in fns)


def to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
            continue
        d: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.role == "assistant" and m.tool_calls:
            d["content"] = m.content or None
            d["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.args, ensure_ascii=False)},
                }
                for c in m.tool_calls
            ]
        if m.name is not None:
            d["name"] = m.name
        out.append(d)
    return out


def _text(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def from_wire(body: Mapping[str, Any]) -> list[Message]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for d in body.get("messages") or ():
        role = "system" if d.get("role") == "developer" else d.get("role")
        if role == "tool":
            tid = d.get("tool_call_id")
            out.append(
                Message(
                    role="tool",
                    content=_text(d.get("content")),
                    tool_call_id=tid,
                    name=names.get(tid) if tid else None,
                )
            )
            continue
        calls = tuple(
            ToolCall(c["id"], c["function"]["name"], parse_args(c["function"].get("arguments") or "") or {})
            for c in d.get("tool_calls") or ()
        )
        names.update((c.id, c.name) for c in calls)
        out.append(
            Message(
                role=cast(Role, role), content=_text(d.get("content")), tool_calls=calls, name=d.get("name")
            )
        )
    return out


def usage_from_wire(u: Mapping[str, Any]) -> Usage:
    details = u.get("prompt_tokens_details") or {}
    prompt = int(u.get("prompt_tokens") or 0)
    cached = int(
        details.get("cached_tokens") or u.get("prompt_cache_hit_tokens") or u.get("cached_tokens") or 0
    )
    written = int(details.get("cache_write_tokens") or 0)
    return Usage(
        input=max(prompt - cached - written, 0),
        output=int(u.get("completion_tokens") or 0),
        cache_read=cached,
        cache_write=written,
    )


# -- responses (server side)


def usage_json(u: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": u.prompt,
        "completion_tokens": u.output,
        "total_tokens": u.prompt + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cache_read, "cache_write_tokens": u.cache_write},
    }


def _wire_calls(c: Completion) -> list[tuple[str, str, str]]:
    calls = [(t.id, t.name, json.dumps(t.args, ensure_ascii=False)) for t in c.tool_calls]
    return calls + [(r["id"], r["name"], r["arguments"]) for r in c.extra.get("raw_tool_calls", ())]


def completion_json(c: Completion, model: str, cid: str, created: int) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": c.content}
    calls = _wire_calls(c)
    if calls:
        msg["content"] = c.content or None
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
        ]
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": msg, "finish_reason": FINISH_TO_WIRE.get(c.stop_reason, "stop")}],
        "usage": usage_json(c.usage),
    }


def sse_chunks(
    c: Completion, model: str, cid: str, created: int, include_usage: bool
) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        d = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return {**d, "usage": None} if include_usage else d

    yield chunk({"role": "assistant", "content": ""})
    for i in range(0, len(c.content), 24):
        yield chunk({"content": c.content[i : i + 24]})
    for index, (call_id, name, args) in enumerate(_wire_calls(c)):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        third = max(len(args) // 3, 1)
        for j in range(0, len(args), third):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": args[j : j + third]}}]})
    yield chunk({}, FINISH_TO_WIRE.get(c.stop_reason, "stop"))
    if include_usage:
        yield {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": usage_json(c.usage),
        }


# -- streamed replies (provider side)


def as_chunk(completion: Any) -> dict[str, Any]:
    """A whole (non-streamed) chat.completion as the one chunk that carries all of it."""
    d = completion if isinstance(completion, dict) else completion.to_dict()
    choices = []
    for choice in d.get("choices") or ():
        delta = dict(choice.get("message") or {})
        delta["tool_calls"] = [{**tc, "index": i} for i, tc in enumerate(delta.get("tool_calls") or ())]
        choices.append(
            {"index": choice.get("index", 0), "delta": delta, "finish_reason": choice.get("finish_reason")}
        )
    return {"model": d.get("model"), "usage": d.get("usage"), "choices": choices}


class ChunkAccumulator:
    """Folds chat.completion.chunk objects (SDK models or dicts) into a StreamResult."""

    def __init__(self, start: float, clock: Any) -> None:
        self.start, self.clock = start, clock
        self.ttft: float | None = None
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.model: str | None = None

    def _first_token(self) -> None:
        if self.ttft is None:
            self.ttft = self.clock() - self.start

    def feed(self, chunk: Any) -> None:
        d = chunk if isinstance(chunk, dict) else chunk.to_dict()
        self.model = d.get("model") or self.model
        if d.get("usage"):
            self.usage = d["usage"]
        for choice in d.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self._first_token()
                self.text.append(text_piece(delta["content"]))
            if delta.get("refusal"):
                self._first_token()
                self.refusal.append(delta["refusal"])
            for tc in delta.get("tool_calls") or ():
                self._first_token()
                slot = self.calls.setdefault(int(tc.get("index", 0)), {"id": "", "name": "", "arguments": ""})
                fn = tc.get("function") or {}
                slot["id"] = slot["id"] or tc.get("id") or ""
                slot["name"] = slot["name"] or fn.get("name") or ""
                slot["arguments"] += text_piece(fn.get("arguments"))
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]

    def result(self, estimate: Any) -> StreamResult:
        """`estimate()` gives a Usage when the endpoint sent none (it ignored include_usage)."""
        if self.finish is None:
            raise TransientError("the stream ended without a finish_reason")
        calls, broken = [], []
        for index, slot in sorted(self.calls.items()):
            args = parse_args(slot["arguments"])
            call_id = slot["id"] or f"call_{index}"
            if args is None:
                broken.append({"id": call_id, "name": slot["name"], "arguments": slot["arguments"]})
            else:
                calls.append(ToolCall(call_id, slot["name"], args))
        stop = FINISH_FROM_WIRE.get(self.finish, "error")
        if stop == "end_turn" and self.calls:  # some local servers say "stop" after tool calls
            stop = "tool_use"
        extra: dict[str, Any] = {"wire_stop_reason": self.finish}
        if broken:
            extra["raw_tool_calls"] = broken
        text = "".join(self.text) or "".join(self.refusal)
        if broken and stop != "max_tokens":
            stop, extra["error"] = "error", "malformed tool-call JSON from the model"
            text = with_raw_calls(text, broken)
        if self.usage is not None:
            usage = usage_from_wire(self.usage)
        else:
            usage, extra["usage_estimated"] = estimate(), True
        if self.refusal and stop == "end_turn":
            stop = "refusal"
        ttft = self.ttft if self.ttft is not None else self.clock() - self.start
        return StreamResult(text, tuple(calls), stop, usage, ttft, self.model, extra)
