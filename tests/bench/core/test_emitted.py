"""The one boundary for what a model emits (bench/core/emitted.py): whatever a provider decodes
becomes a ToolCall / Completion the harness can log, count, dispatch and send again; what
cannot be carried is a refusal the dispatcher answers, or the model's own error."""

from __future__ import annotations

import json

import pytest

from bench.core import emitted
from bench.core.tokens import count_message
from bench.core.types import Completion, Message, ToolCall, Usage, canonical_json
from bench.providers.wire import anthropic, openai
from bench.trial.tools import Tools


def _deep_json(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _completion(**kw) -> Completion:
    base = {
        "content": "",
        "tool_calls": (),
        "stop_reason": "tool_use",
        "usage": Usage(),
        "latency_s": 0.0,
        "ttft_s": 0.0,
        "model_id": "m",
        "request_hash": "h",
    }
    return Completion(**{**base, **kw})


def _anthropic_reply(name, raw_args: str) -> Completion:
    acc = anthropic.StreamAccumulator(0.0, lambda: 0.0)
    for ev in (
        {"type": "message_start", "message": {"model": "m", "usage": {}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": name},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": raw_args},
        },
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        {"type": "message_stop"},
    ):
        acc.feed(ev)
    r = acc.result()
    return _completion(content=r.content, tool_calls=r.tool_calls, stop_reason=r.stop_reason)


def _openai_reply(name, raw_args: str) -> Completion:
    acc = openai.ChunkAccumulator(0.0, lambda: 0.0)
    acc.feed(
        {
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "t", "function": {"name": name, "arguments": raw_args}}
                        ]
                    },
                    "finish_reason": "tool_calls",
                }
            ],
        }
    )
    r = acc.result(lambda: Usage())
    return _completion(content=r.content, tool_calls=r.tool_calls, stop_reason=r.stop_reason)


WIRES = [_anthropic_reply, _openai_reply]
NASTY = [  # (tool name, raw argument text): each once crashed the harness or the next request
    ("write_file", json.dumps({"path": "a.py", "content": "x", "meta": json.loads(_deep_json(600))})),
    ("read_file", _deep_json(100_000)),
    (5, '{"path": "a.py"}'),
    ("read_file", '{"path": "a\\udc80.py"}'),
    ("x" * 10_000, "{}"),
    ("submit_step", '{"notes": "n", "invariants": 5}'),
    ("write_file", json.dumps({"path": "a.py", "content": "x" * (3 << 20)})),
    ("run", '{"command": "ls", "timeout_s": NaN}'),
]


def _sendable(message: Message) -> None:
    for body in (anthropic.to_wire([message]), openai.to_wire([message])):
        json.dumps(body, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("wire", WIRES, ids=["anthropic", "openai"])
@pytest.mark.parametrize("name,raw", NASTY, ids=lambda v: str(v)[:20])
def test_whatever_a_wire_decodes_is_carried(wire, name, raw):
    reply = wire(name, raw)
    message = reply.as_message()
    count_message(message)  # counted (a number as a name crashed count_text)
    _sendable(message)  # the next request encodes (a lone surrogate did not)
    logged = canonical_json(message.to_dict())
    assert len(logged) < 20_000  # a value past the bounds is an excerpt, never the whole
    assert Message.from_dict(json.loads(logged)).sha() == message.sha()  # round-trips through the log
    (call,) = reply.tool_calls
    assert isinstance(call.name, str) and len(call.name) <= emitted.MAX_TOOL_NAME_CHARS + 3
    if call.name in {"write_file", "read_file", "submit_step", "run"} and "udc80" not in raw:
        assert emitted.refusal(call.args), call.args  # each of those breaks a bound or its schema


def test_a_refused_call_is_a_tool_error_naming_why():
    call = ToolCall("t", "read_file", json.loads(_deep_json(600)))
    out = Tools(None, None, exec_timeout_s=1).call(call.name, call.args)  # type: ignore[arg-type] # refused before any handler runs
    assert not out.ok and out.error == "bad_arguments" and "nested deeper than 16 levels" in out.text


def test_without_the_boundary_a_number_as_name_crashes_the_count(monkeypatch):
    monkeypatch.setattr(emitted, "admit_name", lambda name: name)
    reply = _anthropic_reply(5, '{"path": "a.py"}')
    with pytest.raises(TypeError):
        count_message(reply.as_message())


def test_without_the_boundary_a_lone_surrogate_cannot_be_sent(monkeypatch):
    monkeypatch.setattr(emitted, "carry", lambda text: text)
    with pytest.raises(UnicodeEncodeError):
        _sendable(_anthropic_reply("read_file", '{"path": "a\\udc80.py"}').as_message())


def test_without_the_boundary_deep_arguments_raise_past_the_wire(monkeypatch):
    monkeypatch.setattr(emitted, "admit_args", lambda name, args: args)
    reply = _openai_reply(
        "write_file", json.dumps({"path": "a", "content": "x", "m": json.loads(_deep_json(600))})
    )
    with pytest.raises(RecursionError):  # the message's hash, for the log and the next request
        reply.as_message().sha()


def test_a_reply_past_its_bounds_is_the_models_error():
    long = _completion(content="x" * (emitted.MAX_REPLY_CHARS + 1), stop_reason="end_turn")
    assert long.stop_reason == "error" and len(long.content) == emitted.MAX_REPLY_CHARS
    many = _completion(
        tool_calls=tuple(
            ToolCall(f"t{i}", "read_file", {"path": "a"}) for i in range(emitted.MAX_TOOL_CALLS + 1)
        )
    )
    assert many.stop_reason == "error" and len(many.tool_calls) == emitted.MAX_TOOL_CALLS
    assert "tool calls in one reply" in many.extra["error"]
    cut = _completion(content="x" * (emitted.MAX_REPLY_CHARS + 1), stop_reason="max_tokens")
    assert cut.stop_reason == "max_tokens"  # a cut reply keeps its own named failure


def test_honest_calls_pass_unchanged():
    args = {"subcommand": "log", "args": ["--oneline", "-n5"]}
    call = ToolCall("t", "git", args)
    assert call.args == args and call.name == "git"
    # unknown: bounded only
    assert ToolCall("t", "frobnicate", {"any": [1, {"b": None}]}).args == {"any": [1, {"b": None}]}
    assert ToolCall("t", "read_file", {"path": "\u00e9t\u00e9.py"}).args == {"path": "\u00e9t\u00e9.py"}


def test_a_logged_message_reads_back_as_written():
    """A log written before the boundary (a lone surrogate, an argument it would refuse) keeps
    its shas: what is read back is not admitted again."""
    record = {
        "role": "assistant",
        "content": "a\udc80",
        "tool_calls": [{"id": "t", "name": "submit_step", "args": {"notes": "n", "invariants": 5}}],
    }
    message = Message.from_dict(record)
    assert message.content == "a\udc80" and message.tool_calls[0].args["invariants"] == 5
    assert canonical_json(message.to_dict()) == canonical_json(record)


def test_submit_step_arguments_are_checked_as_the_loop_receives_them():
    assert Tools.submit_refusal({"notes": "done", "invariants": ["x stays"]}) is None
    for args in (
        {"notes": "n", "invariants": 5},
        {"notes": 7},
        "done",
        None,
        {"invariants": []},
        ToolCall("t", "submit_step", {"notes": "n", "invariants": [{"a": 1}]}).args,
    ):
        text = Tools.submit_refusal(args)
        assert text is not None and text.startswith("ERROR:") and "not submitted" in text, args


def test_parse_args_never_raises():
    assert emitted.parse_args("{not json") is None
    assert emitted.parse_args("[1]") is None
    assert emitted.refusal(emitted.parse_args(_deep_json(100_000)))
    assert emitted.refusal(emitted.parse_args('"' + "x" * (emitted.MAX_ARGS_CHARS + 2048) + '"'))
    assert emitted.parse_args('{"a": "\\udc80"}') == {"a": "\udc80"}  # carried by ToolCall, not here


def test_a_model_sending_the_refused_shape_is_carried_and_bounded_again():
    """The shape a refused call is carried with is no way around the boundary: a model that sends
    it itself gets it admitted like anything else (a lone surrogate, a deep list)."""
    from bench.core.types import Message, ToolCall

    deep: list = []
    inner = deep
    for _ in range(5000):
        inner.append([])
        inner = inner[0]
    for sent in ("\udc80", deep):
        call = ToolCall("c1", "write_file", {"ctxbench_refused": "x\udc80", "sent": sent})
        message = Message(role="assistant", content="", tool_calls=(call,))
        assert message.canonical().encode()  # neither UnicodeEncodeError nor RecursionError
