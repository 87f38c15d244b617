"""A message's tokens are counted once (bench/core/tokens.py): the same count as counting it
afresh, for content and tool calls alike, and a message equal to another stays equal."""

from __future__ import annotations

from unittest import mock

from bench.core import tokens
from bench.core.types import Message, ToolCall


def _fresh(m: Message) -> int:
    return (
        tokens.MESSAGE_OVERHEAD
        + tokens.count_text(m.content)
        + sum(
            tokens.count_text(c.name) + tokens.count_text(tokens.canonical_json(c.args)) for c in m.tool_calls
        )
    )


def test_a_message_is_counted_once_and_as_counting_it_afresh():
    m = Message(
        role="assistant",
        content="Editing now.",
        tool_calls=(
            ToolCall(id="c1", name="write_file", args={"path": "a.py", "content": "x = 1\n" * 40}),
            ToolCall(id="c2", name="submit_step", args={"notes": "ñ done", "invariants": ["keep a"]}),
        ),
    )
    twin = Message(role="assistant", content=m.content, tool_calls=m.tool_calls)
    with mock.patch.object(tokens, "canonical_json", wraps=tokens.canonical_json) as serialise:
        first = tokens.count_message(m)
        assert tokens.count_message(m) == first and serialise.call_count == 2  # once per call, not per count
    assert first == _fresh(m) == tokens.count_message(twin)
    assert m == twin and tokens.count_messages([m, twin]) == 2 * first
    plain = Message(role="user", content="")
    assert tokens.count_message(plain) == tokens.MESSAGE_OVERHEAD + tokens.count_text("")
