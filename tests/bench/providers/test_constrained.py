"""model.tool_calls=grammar (a reply constrained to one call of a published tool) and
model.stream=false, through the OpenAI SDK against the loopback server; the real server's
side (llama.cpp honouring the schema) is tests/bench/real/."""

from __future__ import annotations

import json

import pytest

from bench.core.toolspecs import TOOLS
from bench.core.types import Completion, Message, ToolCall, Usage
from bench.providers.wire import constrained
from bench.serve.server import LoopbackServer
from tests.helpers.serve_support import CONVERSATION, ScriptedBackend, make

pytestmark = pytest.mark.usefixtures("api_keys")


class Recording(ScriptedBackend):
    """Answers with plain text (what a constrained model writes) and keeps the wire bodies."""

    def __init__(self, text: str) -> None:
        super().__init__(
            Completion(
                content=text,
                tool_calls=(),
                stop_reason="end_turn",
                usage=Usage(input=100, output=20),
                latency_s=0.1,
                ttft_s=0.05,
                model_id="scripted",
                request_hash="",
            )
        )


def test_the_schema_admits_only_published_tools_with_their_parameters():
    schema = constrained.response_format(TOOLS)["json_schema"]["schema"]
    names = [alt["properties"]["name"]["const"] for alt in schema["oneOf"]]
    assert names == [t.name for t in TOOLS]
    assert schema["oneOf"][0]["properties"]["arguments"] == TOOLS[0].parameters


def test_the_conversation_goes_as_plain_turns_with_the_tools_in_the_system_message():
    wire = constrained.to_wire(CONVERSATION, TOOLS)
    assert all(set(d) == {"role", "content"} for d in wire)  # no tool_calls, no tool role
    assert "submit_step(notes: string, invariants?: array)" in wire[0]["content"]
    assert json.loads(wire[2]["content"].splitlines()[0]) == {
        "name": "read_file",
        "arguments": {"path": "a.py"},
    }
    assert wire[3]["role"] == "user" and '<tool_result name="read_file">' in wire[3]["content"]
    assert [d["role"] for d in wire].count("system") == 1


@pytest.mark.parametrize(
    "text,expected",
    [
        ('{"name": "grep", "arguments": {"pattern": "def "}}', ToolCall("c", "grep", {"pattern": "def "})),
        ('{"name": "rm_rf", "arguments": {}}', None),  # not a published tool
        ('{"name": "grep", "arguments": {"pat', None),  # cut at max_tokens
        ("I will read the file.", None),
    ],
)
def test_a_constrained_reply_is_parsed_back(text, expected):
    assert constrained.parse_call(text, TOOLS, "c") == expected


@pytest.mark.parametrize("stream", [True, False])
def test_grammar_mode_sends_a_schema_not_tools_and_returns_the_call(stream, monkeypatch):
    sent: list[dict] = []
    backend = Recording('{"name": "read_file", "arguments": {"path": "a.py"}}')
    with LoopbackServer(backend) as srv:
        p = make("openai", srv, tool_calls="grammar", stream=stream)
        create = p._client.chat.completions.create
        monkeypatch.setattr(
            p._client.chat.completions, "create", lambda **kw: sent.append(kw) or create(**kw)
        )
        try:
            c = p.complete(CONVERSATION[:2], TOOLS, max_tokens=64, seed=3)
        finally:
            p.close()
    body = sent[0]
    assert "tools" not in body and body["response_format"]["type"] == "json_schema"
    assert body["stream"] is stream and ("stream_options" in body) is stream
    assert c.tool_calls[0].name == "read_file" and c.tool_calls[0].args == {"path": "a.py"}
    assert c.stop_reason == "tool_use" and c.content == "" and c.extra["constrained"] is True
    assert c.usage.prompt == 100  # usage arrives either way


def test_stream_false_with_native_tools_keeps_the_tool_calls():
    with LoopbackServer(ScriptedBackend()) as srv:
        p = make("openai", srv, stream=False)
        try:
            c = p.complete(CONVERSATION[:2], TOOLS, max_tokens=64, seed=3)
        finally:
            p.close()
    assert c.tool_calls == (ToolCall("call_1", "read_file", {"path": "a.py"}),)
    assert c.usage.cache_read == 1024 and c.ttft_s == c.latency_s or c.ttft_s <= c.latency_s


def test_grammar_mode_without_tools_is_a_plain_request():
    """A summariser call offers no tools: nothing is constrained."""
    backend = Recording("The summary.")
    with LoopbackServer(backend) as srv:
        p = make("openai", srv, tool_calls="grammar")
        try:
            c = p.complete((Message("user", "Summarise."),), (), max_tokens=64, seed=3)
        finally:
            p.close()
    assert c.content == "The summary." and c.tool_calls == ()
