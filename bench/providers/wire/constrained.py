"""`model.tool_calls=grammar`: tool calls for models too small to make them on their own.

A 135M-parameter model served by llama.cpp writes free text, or made-up markers, where a tool
call should be, even when its chat template lists the tools; the server applies no grammar
for `tool_choice=required`. Constrained decoding closes that: the request carries no `tools`,
the tool list is written into the system message, and `response_format` holds a JSON schema
whose only valid documents are `{"name": <a published tool>, "arguments": <its parameters>}`
(llama.cpp turns it into a grammar, vLLM into guided decoding, OpenAI into structured output).
Each reply is then exactly one tool call, parsed back here. The conversation goes to the
server as plain text (a call as its JSON, a result as a user turn), so no chat template's
tool handling is involved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from bench.core.emitted import parse_args
from bench.core.types import Message, ToolCall, ToolSpec

RESULT_OPEN = '<tool_result name="{name}">'
RESULT_CLOSE = "</tool_result>"


def response_format(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """A JSON schema admitting one call of one published tool, with that tool's own parameters."""
    one_of = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": t.parameters},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    return {
        "type": "json_schema",
        "json_schema": {"name": "tool_call", "strict": True, "schema": {"oneOf": one_of}},
    }


def tools_note(tools: Sequence[ToolSpec]) -> str:
    lines = [
        'Reply with exactly one tool call as a JSON object {"name": <tool>, "arguments": {...}}. The tools:'
    ]
    for t in tools:
        props = t.parameters.get("properties", {})
        required = set(t.parameters.get("required", ()))
        args = ", ".join(
            f"{k}{'' if k in required else '?'}: {v.get('type', 'any')}" for k, v in props.items()
        )
        lines.append(f"- {t.name}({args}): {t.description}")
    return "\n".join(lines)


def to_wire(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The conversation as plain chat turns, the tool list appended to the system message."""
    out: list[dict[str, Any]] = []
    note = tools_note(tools) if tools else ""
    for m in messages:
        if m.role == "tool":
            text = f"{RESULT_OPEN.format(name=m.name or 'tool')}\n{m.content}\n{RESULT_CLOSE}"
            if out and out[-1]["role"] == "user":  # several results of one reply: one user turn
                out[-1]["content"] += "\n" + text
            else:
                out.append({"role": "user", "content": text})
            continue
        content = m.content
        if m.role == "assistant" and m.tool_calls:
            content = "\n".join(
                json.dumps({"name": c.name, "arguments": c.args}, ensure_ascii=False) for c in m.tool_calls
            )
        role = m.role
        if role == "system" and out:  # a later harness note: many chat templates allow one system turn
            role = "user"
        if role == "system" and note:
            content, note = f"{content}\n\n{note}", ""
        if out and out[-1]["role"] == role == "user":
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    if note:  # no system message in this request: the note is one
        out.insert(0, {"role": "system", "content": note})
    return out


def parse_call(text: str, tools: Sequence[ToolSpec], call_id: str) -> ToolCall | None:
    """The one tool call a constrained reply holds, or None (a reply cut short, or a server that
    ignored the schema: then the text is what the model said, and the loop nudges it)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    doc = parse_args(text[start : end + 1])
    if doc is None or doc.get("name") not in {t.name for t in tools}:
        return None
    args = doc.get("arguments")
    return ToolCall(call_id, str(doc["name"]), args if isinstance(args, dict) else {})
