"""raw: the whole transcript; oldest whole turns dropped past the budget."""

from __future__ import annotations

import pytest

from bench.core.types import Message, ToolCall
from strategies.base import stable_prefix
from strategies.raw import RawConfig, RawStrategy
from tests.helpers import strategy_loop as fx


def turn(i: int, size: int) -> tuple[Message, Message]:
    return (
        Message(
            role="assistant", content=f"turn {i}", tool_calls=(ToolCall(f"c{i}", "run", {"command": "ls"}),)
        ),
        Message(role="tool", content="word " * size, tool_call_id=f"c{i}", name="run"),
    )


def transcript(n_before: int, n_after: int, size: int = 200):
    """n_before turns of an earlier step, this step's notice, n_after turns."""
    state = fx.hand_state()
    msgs = [m for i in range(n_before) for m in turn(i, size)]
    start = len(msgs)
    msgs.append(state.transcript[0])
    msgs += [m for i in range(n_before, n_before + n_after) for m in turn(i, size)]
    return state, tuple(msgs), start


def test_whole_transcript_when_it_fits():
    state, msgs, start = transcript(3, 2)
    built = RawStrategy().build(fx.hand_state(transcript=msgs, step_start=start))
    assert built.messages == stable_prefix(state.task) + msgs
    assert (built.stable, built.dropped, built.compact) == (2, 0, False)


def test_drops_oldest_turns_keeping_prefix_and_step_notice():
    state, msgs, start = transcript(3, 3)
    full = RawStrategy().build(fx.hand_state(transcript=msgs, step_start=start)).tokens
    per_turn = full - RawStrategy().build(fx.hand_state(transcript=msgs[2:], step_start=start - 2)).tokens
    # room for the prefix, the notice and ~3.5 turns: the 3 turns before the notice go, and one after it
    window = full - 3 * per_turn + per_turn // 2 + 1000
    built = RawStrategy().build(fx.hand_state(transcript=msgs, step_start=start, window=window))
    assert built.dropped == 6 and built.tokens_before_drop == full
    assert built.messages == stable_prefix(state.task) + msgs[start:]
    window -= per_turn
    built = RawStrategy().build(fx.hand_state(transcript=msgs, step_start=start, window=window))
    assert built.dropped == 8
    assert built.messages == stable_prefix(state.task) + (msgs[start],) + msgs[start + 3 :]
    assert built.tokens <= window - 1000


def test_overflow_returns_the_minimal_context_with_dropped_set():
    state, msgs, start = transcript(2, 2)
    built = RawStrategy().build(fx.hand_state(transcript=msgs, step_start=start, window=1100))
    assert built.messages == stable_prefix(state.task) + (msgs[start],)
    assert built.dropped == 8 and built.tokens > 100


def test_config_and_no_summary_request():
    assert RawConfig().name == "raw"
    with pytest.raises(ValueError):
        RawConfig(name="ledger")
    with pytest.raises(RuntimeError):
        RawStrategy().summary_request(fx.hand_state())
