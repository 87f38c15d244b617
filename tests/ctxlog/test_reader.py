"""The one reader: turns with their rebuilt contexts, tolerant of torn logs, strict on demand."""

from __future__ import annotations

import json

import pytest

from ctxlog import events as ev
from ctxlog.reader import Log


def _log() -> list[dict]:
    sys_, task = {"role": "system", "content": "sys"}, {"role": "user", "content": "task"}
    call = {"id": "c1", "name": "read_file", "args": {"path": "a.py"}}
    out = [ev.TrialStart(trial_id="x", schema=ev.SCHEMA),
           ev.Message(sha="m1", message=sys_), ev.Message(sha="m2", message=task),
           ev.Context(turn=0, messages=["m1", "m2"], tokens=9),
           ev.ModelCall(turn=0, tool_calls=[call]),
           ev.ToolCall(turn=0, call_id="c1", name="read_file", args={"path": "a.py"}),
           ev.ToolResult(turn=0, call_id="c1", name="read_file", ok=True, output="x"),
           ev.Message(sha="m3", message={"role": "user", "content": "summarise"}),
           ev.Context(turn=1, purpose="compaction", messages=["m1", "m3"]),
           ev.ModelCall(turn=1, purpose="compaction", content="summary"),
           ev.Compaction(turn=1, summary="summary"),
           ev.Context(turn=1, messages=["m1", "m9"]),  # a message the log lacks; no reply (a crash)
           ]
    return [e.record() | {"seq": i} for i, e in enumerate(out)]


def test_turns_carry_their_rebuilt_context_reply_and_tools():
    log = Log.from_records(_log())
    turns = log.turns()
    assert [t.index for t in turns] == [0, 1]
    first = turns[0]
    assert [m["content"] for m in first.call.messages] == ["sys", "task"]
    assert first.call.reply is not None and first.call.reply.tool_calls[0]["id"] == "c1"
    ((call, result),) = first.tools
    assert call.args == {"path": "a.py"} and result is not None and result.ok
    assert turns[1].call.messages is None and turns[1].call.reply is None
    summariser = [c for c in log.calls if c.context.purpose == "compaction"]
    assert [m["content"] for m in summariser[0].messages] == ["sys", "summarise"]
    assert log.context_at(5) is None and log.context_at(0) == first.call.messages
    assert log.schema == ev.SCHEMA and log.start.trial_id == "x"


def test_a_torn_line_is_counted_or_named():
    text = "\n".join(json.dumps(r) for r in _log()) + '\n{"seq": 12, "kind": "mod'
    log = Log.from_text(text)
    assert log.unreadable == 1 and len(log.events) == 12
    with pytest.raises(ValueError, match=r"events.jsonl:13: not a JSON record"):
        Log.from_text(text, strict=True)
