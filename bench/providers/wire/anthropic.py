"""Harness messages <-> the Anthropic Messages wire format, both directions.

The provider uses `to_wire` and `StreamAccumulator`; the loopback server uses `from_wire`,
`message_json` and `sse_events`. `from_wire(to_wire(m))` gives back `m` exactly (tested), which
is what makes a trial through the SDK and the server see the same messages as a direct sim trial.

Mapping: leading `system` messages -> the `system` param (one text block each); a later system
message -> a user text block prefixed SYSTEM_PREFIX; `user` and `tool` messages -> blocks of one
user turn (consecutive ones merged: text blocks, `tool_result` blocks); `assistant` -> a text
block (when non-empty) then `tool_use` blocks. The cache breakpoint (`cache_breakpoint` leading
messages) is a `cache_control` mark on the block that ends message `cache_breakpoint - 1`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from bench.core.emitted import parse_args
from bench.core.types import Completion, Message, ToolCall, ToolSpec, Usage
from bench.providers.http.transport import StreamResult, TransientError

SYSTEM_PREFIX = "[system]\n"
EPHEMERAL = {"type": "ephemeral"}
STOP_FROM_WIRE = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "model_context_window_exceeded": "max_tokens",
    "pause_turn": "error",
}
STOP_TO_WIRE = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "error": "end_turn",
}


def tools_to_wire(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]


def tools_from_wire(tools: Sequence[Mapping[str, Any]] | None) -> tuple[ToolSpec, ...]:
    return tuple(
        ToolSpec(t["name"], t.get("description", ""), t.get("input_schema") or {}) for t in tools or ()
    )


def to_wire(
    messages: Sequence[Message], cache_breakpoint: int | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages) for the Messages API."""
    system: list[dict[str, Any]] = []
    wire: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m.role == "system" and not wire:
            block: dict[str, Any] = {"type": "text", "text": m.content}
            system.append(block)
        elif m.role == "assistant":
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": m.content}] if m.content or not m.tool_calls else []
            )
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in m.tool_calls
            ]
            wire.append({"role": "assistant", "content": blocks})
            block = blocks[-1]
        else:
            if m.role == "tool":
                block = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            else:
                block = {"type": "text", "text": (SYSTEM_PREFIX if m.role == "system" else "") + m.content}
            if wire and wire[-1]["role"] == "user":
                wire[-1]["content"].append(block)
            else:
                wire.append({"role": "user", "content": [block]})
        if cache_breakpoint is not None and i == cache_breakpoint - 1:
            block["cache_control"] = dict(EPHEMERAL)
    return system, wire


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or () if b.get("type") == "text")


def from_wire(body: Mapping[str, Any]) -> tuple[list[Message], int | None]:
    """Harness messages and the cache breakpoint (None if unmarked) of a Messages request."""
    out: list[Message] = []
    mark: int | None = None
    system = body.get("system") or []
    for b in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        out.append(Message(role="system", content=b.get("text", "")))
        mark = len(out) if b.get("cache_control") else mark
    names: dict[str, str] = {}
    for turn in body.get("messages") or ():
        content = turn.get("content")
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else list(content or ())
        )
        if turn.get("role") == "assistant":
            calls = tuple(
                ToolCall(b["id"], b["name"], dict(b.get("input") or {}))
                for b in blocks
                if b.get("type") == "tool_use"
            )
            names.update((c.id, c.name) for c in calls)
            out.append(Message(role="assistant", content=_text(blocks), tool_calls=calls))
            mark = len(out) if any(b.get("cache_control") for b in blocks) else mark
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                tid = b.get("tool_use_id")
                out.append(
                    Message(
                        role="tool",
                        content=_text(b.get("content")),
                        tool_call_id=tid,
                        name=names.get(tid) if tid else None,
                    )
                )
            elif b.get("type") == "text":
                text = b.get("text", "")
                if text.startswith(SYSTEM_PREFIX):
                    out.append(Message(role="system", content=text[len(SYSTEM_PREFIX) :]))
                else:
                    out.append(Message(role="user", content=text))
            else:
                continue
            mark = len(out) if b.get("cache_control") else mark
    return out, mark


def seed_from_metadata(body: Mapping[str, Any]) -> int:
    user = str((body.get("metadata") or {}).get("user_id") or "")
    return int(user[5:]) if user.startswith("seed-") and user[5:].lstrip("-").isdigit() else 0


# -- responses (server side)


def usage_json(u: Usage) -> dict[str, int]:
    return {
        "input_tokens": u.input,
        "output_tokens": u.output,
        "cache_read_input_tokens": u.cache_read,
        "cache_creation_input_tokens": u.cache_write,
    }


def _blocks(c: Completion) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(content_block_start block, its deltas) for each content block of a completion."""
    out: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if c.content or not (c.tool_calls or c.extra.get("raw_tool_calls")):
        pieces = [c.content[i : i + 24] for i in range(0, len(c.content), 24)] or [""]
        out.append(({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces]))
    calls = [(t.id, t.name, json.dumps(t.args, ensure_ascii=False)) for t in c.tool_calls]
    # A reply whose tool-call JSON was malformed carries the raw text: send it as the model did.
    calls += [(r["id"], r["name"], r["arguments"]) for r in c.extra.get("raw_tool_calls", ())]
    for call_id, name, args in calls:
        third = max(len(args) // 3, 1)
        pieces = [args[i : i + third] for i in range(0, len(args), third)]
        out.append(
            (
                {"type": "tool_use", "id": call_id, "name": name, "input": {}},
                [{"type": "input_json_delta", "partial_json": p} for p in pieces],
            )
        )
    return out


def message_json(c: Completion, model: str, msg_id: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if c.content or not c.tool_calls:
        content.append({"type": "text", "text": c.content})
    content += [{"type": "tool_use", "id": t.id, "name": t.name, "input": t.args} for t in c.tool_calls]
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": STOP_TO_WIRE.get(c.stop_reason, "end_turn"),
        "stop_sequence": None,
        "usage": usage_json(c.usage),
    }


def sse_events(c: Completion, model: str, msg_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
    start = {
        **message_json(c, model, msg_id),
        "content": [],
        "stop_reason": None,
        "usage": {**usage_json(c.usage), "output_tokens": 0},
    }
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, (block, deltas) in enumerate(_blocks(c)):
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        for d in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "usage": usage_json(c.usage),
            "delta": {"stop_reason": STOP_TO_WIRE.get(c.stop_reason, "end_turn"), "stop_sequence": None},
        },
    )
    yield "message_stop", {"type": "message_stop"}


# -- streamed replies (provider side)


def with_raw_calls(text: str, broken: list[dict[str, Any]]) -> str:
    """The reply text plus the raw tool calls that did not parse, so the event log shows them."""
    raw = "\n".join(f"[malformed tool call {b['name']} id={b['id']}: {b['arguments']}]" for b in broken)
    return f"{text}\n{raw}" if text else raw


def text_piece(value: Any) -> str:
    """A streamed piece of text as a string, whatever the wire sent (a number, null, an object)."""
    if isinstance(value, str) or value is None:
        return value or ""
    return json.dumps(value, ensure_ascii=False, default=repr)


class StreamAccumulator:
    """Folds raw Messages stream events (SDK models or dicts) into a StreamResult."""

    def __init__(self, start: float, clock: Any) -> None:
        self.start, self.clock = start, clock
        self.ttft: float | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, int] = {}
        self.stop: str | None = None
        self.model: str | None = None
        self.done = False

    def feed(self, event: Any) -> None:
        ev = event if isinstance(event, dict) else event.to_dict()
        kind = ev.get("type")
        if kind == "message_start":
            msg = ev.get("message") or {}
            self.model = msg.get("model")
            self.usage.update({k: v for k, v in (msg.get("usage") or {}).items() if isinstance(v, int)})
        elif kind == "content_block_start":
            block = dict(ev["content_block"])
            block["json"] = ""
            self.blocks[ev["index"]] = block
            if block.get("type") == "tool_use" and self.ttft is None:
                self.ttft = self.clock() - self.start
        elif kind == "content_block_delta":
            block, delta = self.blocks[ev["index"]], ev.get("delta") or {}
            if delta.get("type") == "text_delta":
                block["text"] = text_piece(block.get("text")) + text_piece(delta.get("text"))
            elif delta.get("type") == "input_json_delta":
                block["json"] += text_piece(delta.get("partial_json"))
            if self.ttft is None and (delta.get("text") or delta.get("partial_json")):
                self.ttft = self.clock() - self.start
        elif kind == "message_delta":
            self.stop = (ev.get("delta") or {}).get("stop_reason")
            self.usage.update({k: v for k, v in (ev.get("usage") or {}).items() if isinstance(v, int)})
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            raise TransientError(f"error event in stream: {ev.get('error')}")

    def result(self) -> StreamResult:
        if not self.done:
            raise TransientError("the stream ended before message_stop")
        text = "".join(b.get("text", "") for _, b in sorted(self.blocks.items()) if b.get("type") == "text")
        calls: list[ToolCall] = []
        broken: list[dict[str, Any]] = []
        for _, b in sorted(self.blocks.items()):
            if b.get("type") != "tool_use":
                continue
            # Whatever the id, name and arguments are, ToolCall admits them (bench/core/emitted.py).
            args = parse_args(b["json"]) if b["json"] else b.get("input") or {}
            name: Any = b.get("name")
            if args is None:
                broken.append({"id": b.get("id"), "name": name, "arguments": b["json"]})
            else:
                calls.append(ToolCall(b.get("id") or f"toolu_{len(calls)}", name, args))
        stop = STOP_FROM_WIRE.get(self.stop or "", "error")
        extra: dict[str, Any] = {"wire_stop_reason": self.stop}
        if broken:
            extra["raw_tool_calls"] = broken
            if stop != "max_tokens":  # a cut reply stays max_tokens: that is the named failure
                stop, extra["error"] = "error", "malformed tool-call JSON from the model"
                text = with_raw_calls(text, broken)
        usage = Usage(
            input=self.usage.get("input_tokens", 0),
            output=self.usage.get("output_tokens", 0),
            cache_read=self.usage.get("cache_read_input_tokens", 0) or 0,
            cache_write=self.usage.get("cache_creation_input_tokens", 0) or 0,
        )
        ttft = self.ttft if self.ttft is not None else self.clock() - self.start
        return StreamResult(text, tuple(calls), stop, usage, ttft, self.model, extra)
