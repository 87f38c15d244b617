"""Harness messages <-> the OpenAI Responses API (`POST /v1/responses`), server side.

Codex speaks only this API (docs/agents.md), so the model proxy (bench/proxy/) decodes
its requests with `from_wire` and answers with `response_json` or `sse_events`.

Mapping: `instructions` and `developer`/`system` message items -> system messages; `user` and
`assistant` message items -> messages of that role (their text parts joined); a `function_call`
item -> a tool call of the assistant message before it (a new empty assistant message when the
item before is not one); a `function_call_output` item -> a `tool` message. Reasoning items carry
nothing the harness reads and are skipped (the raw body is what the event log keeps).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from bench.core.types import Completion, Message, ToolCall, ToolSpec, Usage
from bench.providers.http.transport import parse_tool_args

TEXT_PARTS = ("input_text", "output_text", "text")
STATUS_TO_WIRE = {"max_tokens": "incomplete"}


def tools_from_wire(tools: Sequence[Mapping[str, Any]] | None) -> tuple[ToolSpec, ...]:
    """Function tools (Responses puts name and parameters at the top of the tool, not under
    `function`); other tool kinds (web_search, custom) are not callable by the harness's models."""
    out = []
    for t in tools or ():
        fn = t.get("function") or t
        if t.get("type", "function") == "function" and fn.get("name"):
            out.append(
                ToolSpec(str(fn["name"]), str(fn.get("description") or ""), dict(fn.get("parameters") or {}))
            )
    return tuple(out)


def _text(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(
        str(p.get("text") or "") for p in content if isinstance(p, Mapping) and p.get("type") in TEXT_PARTS
    )


def from_wire(body: Mapping[str, Any]) -> list[Message]:
    out: list[Message] = []
    if body.get("instructions"):
        out.append(Message(role="system", content=str(body["instructions"])))
    items = body.get("input")
    names: dict[str, str] = {}
    for item in (
        [{"type": "message", "role": "user", "content": items}] if isinstance(items, str) else items or ()
    ):
        kind = item.get("type", "message")
        if kind == "message":
            role = {"developer": "system"}.get(str(item.get("role")), str(item.get("role")))
            if role not in ("system", "user", "assistant"):
                continue
            out.append(Message(role=role, content=_text(item.get("content"))))  # type: ignore[arg-type]
        elif kind == "function_call":
            call = ToolCall(
                str(item.get("call_id") or item.get("id") or ""),
                str(item.get("name") or ""),
                parse_tool_args(str(item.get("arguments") or "")) or {},
            )
            names[call.id] = call.name
            if out and out[-1].role == "assistant":
                last = out.pop()
                out.append(
                    Message(role="assistant", content=last.content, tool_calls=(*last.tool_calls, call))
                )
            else:
                out.append(Message(role="assistant", content="", tool_calls=(call,)))
        elif kind == "function_call_output":
            cid = str(item.get("call_id") or "")
            output = item.get("output")
            out.append(
                Message(
                    role="tool",
                    content=output if isinstance(output, str) else _text(output),
                    tool_call_id=cid,
                    name=names.get(cid),
                )
            )
    return out


def max_tokens(body: Mapping[str, Any], default: int) -> int:
    value = body.get("max_output_tokens")
    return int(value) if isinstance(value, int) and value > 0 else default


# -- responses (server side)


def usage_json(u: Usage) -> dict[str, Any]:
    return {
        "input_tokens": u.prompt,
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.prompt + u.output,
    }


def _items(c: Completion, rid: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if c.content or not c.tool_calls:
        items.append(
            {
                "type": "message",
                "id": f"msg_{rid}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": c.content, "annotations": []}],
            }
        )
    for i, t in enumerate(c.tool_calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{rid}_{i}",
                "call_id": t.id,
                "name": t.name,
                "arguments": json.dumps(t.args, ensure_ascii=False),
                "status": "completed",
            }
        )
    return items


def response_json(c: Completion, model: str, rid: str, created: int) -> dict[str, Any]:
    status = STATUS_TO_WIRE.get(c.stop_reason, "completed")
    return {
        "id": f"resp_{rid}",
        "object": "response",
        "created_at": created,
        "status": status,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "error": None,
        "model": model,
        "output": _items(c, rid),
        "usage": usage_json(c.usage),
    }


def sse_events(c: Completion, model: str, rid: str, created: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) in the order the API streams them; every data carries its `type` and
    `sequence_number`."""
    seq = iter(range(1_000_000))
    whole = response_json(c, model, rid, created)
    shell = {**whole, "status": "in_progress", "output": [], "usage": None}

    def event(kind: str, **data: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(seq), **data}

    yield event("response.created", response=shell)
    yield event("response.in_progress", response=shell)
    for index, item in enumerate(whole["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            yield event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            for i in range(0, len(text), 24):
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=text[i : i + 24],
                )
            yield event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
            )
            yield event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part={**part, "text": text},
            )
        else:
            args = item["arguments"]
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            third = max(len(args) // 3, 1)
            for i in range(0, len(args), third):
                yield event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=args[i : i + third],
                )
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=args,
            )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event(
        "response.incomplete" if whole["status"] == "incomplete" else "response.completed", response=whole
    )
