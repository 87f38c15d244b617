"""Shared helpers: turn grouping, cut points, fitting, prompt validation."""

from __future__ import annotations

import pytest

from bench.core.types import Message, ToolCall
from strategies import _common


def asst(i: str, *calls: str) -> Message:
    return Message(
        role="assistant",
        content=f"turn {i}",
        tool_calls=tuple(ToolCall(f"{i}{c}", "read_file", {"path": c}) for c in calls),
    )


def tool(i: str, text: str = "ok") -> Message:
    return Message(role="tool", content=text, tool_call_id=i, name="read_file")


NOTICE = Message(role="user", content="CURRENT STEP [step:s01] x")
MSGS = (
    NOTICE,
    asst("a", "x", "y"),
    tool("ax"),
    tool("ay"),
    asst("b"),
    asst("c", "z"),
    tool("cz"),
    Message(role="user", content="harness note"),
)


def test_groups_keep_tool_results_with_their_call():
    assert _common.groups(MSGS) == [(0, 1), (1, 4), (4, 5), (5, 7), (7, 8)]
    assert _common.groups(MSGS, 1, 6) == [(1, 4), (4, 5), (5, 6)]
    assert _common.groups(MSGS, 9, 8) == []


def test_cut_point_keeps_recent_assistant_turns():
    assert _common.cut_point(MSGS, 0, len(MSGS), 0) == len(MSGS)
    assert _common.cut_point(MSGS, 0, len(MSGS), 1) == 5
    assert _common.cut_point(MSGS, 0, len(MSGS), 2) == 4
    assert _common.cut_point(MSGS, 0, 4, 2) == 0  # fewer assistant turns than kept: nothing to summarise
    assert _common.cut_point(MSGS, 1, 7, 1) == 5


def test_fit_drops_whole_turns_oldest_first_and_keeps_the_pin():
    head = (Message(role="system", content="sys"),)
    big = (NOTICE, asst("a", "x"), tool("ax", "word " * 400), asst("b", "y"), tool("by", "word " * 10))
    full = _common.tokens(head) + _common.tokens(big)
    f = _common.fit(head, big, full)
    assert f.dropped == 0 and f.tokens == full and f.messages == head + big
    f = _common.fit(head, big, full - 1, pin=0)
    assert f.messages == head + (NOTICE, big[3], big[4])
    assert (f.dropped, f.tokens_before_drop, f.tokens) == (2, full, _common.tokens(f.messages))
    f = _common.fit(head, big, 1, pin=0)  # even the minimal context does not fit: returned anyway
    assert f.messages == head + (NOTICE,) and f.dropped == 4 and f.tokens > 1
    assert all(m.role != "tool" for m in _common.fit(head, big, 1).messages)


def test_prompt_must_carry_the_marker_line():
    from strategies.compaction import CompactionConfig

    assert _common.validate_prompt(_common.DEFAULT_COMPACTION_PROMPT)
    assert _common.validate_prompt("a\n  [compaction-request]  \nb")
    assert CompactionConfig(prompt=None).prompt == _common.DEFAULT_COMPACTION_PROMPT  # null: the built-in one
    for bad in ("summarise [compaction-request] now", "", "[compaction-request", 3):
        with pytest.raises(ValueError):
            CompactionConfig(prompt=bad)  # type: ignore[arg-type]


def test_render_transcript_keeps_calls_and_results():
    pieces = _common.render_transcript(MSGS[1:4])
    assert pieces[0].startswith('[assistant]\nturn a\n-> read_file {"path":"x"}')
    assert pieces[1] == "[tool result read_file]\nok"


def test_one_line():
    assert _common.one_line(" a\n b  c ", 10) == "a b c"
    assert _common.one_line("x" * 50, 10) == "x" * 9 + "…"
