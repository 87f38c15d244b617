"""masking: the raw transcript with older tool outputs replaced by one-line placeholders."""

from __future__ import annotations

import pytest

from bench.core.types import Message, ToolCall
from strategies import make_strategy
from strategies.base import stable_prefix
from strategies.masking import MaskingConfig, MaskingStrategy, masked
from strategies.raw import RawStrategy
from tests.helpers import strategy_loop as fx


def turn(i: int, size: int = 200) -> tuple[Message, Message]:
    call = ToolCall(
        f"c{i}",
        "submit_step" if i % 3 == 2 else "read_file",
        {"notes": f"step {i}: the shim stays until s08"} if i % 3 == 2 else {"path": f"m{i}.py"},
    )
    return (
        Message(role="assistant", content=f"thinking about turn {i}", tool_calls=(call,)),
        Message(role="tool", content="\n".join(["line"] * size), tool_call_id=f"c{i}", name=call.name),
    )


def state_with(n: int, **kw):
    notice = fx.hand_state().transcript[0]
    msgs = (notice, *[m for i in range(n) for m in turn(i)])
    return fx.hand_state(transcript=msgs, step_start=0, **kw)


def test_older_tool_outputs_become_placeholders_and_the_rest_stays():
    state = state_with(6)
    built = MaskingStrategy(MaskingConfig(keep_recent_turns=2)).build(state)
    body = built.messages[len(stable_prefix(state.task)) :]
    assert len(body) == len(state.transcript) and built.dropped == 0
    for i, (seen, original) in enumerate(zip(body, state.transcript, strict=True)):
        if original.role != "tool":
            assert seen == original  # reasoning, actions (submit notes included), step notices
        elif i < len(state.transcript) - 4:  # the 4 newest messages are the 2 newest turns
            assert seen.content == f"[{original.name} output omitted: 200 lines]"
            assert (seen.tool_call_id, seen.name) == (original.tool_call_id, original.name)
        else:
            assert seen == original
    assert built.tokens < RawStrategy().build(state).tokens / 2


def test_keep_everything_when_the_window_holds_every_turn_and_nothing_when_zero():
    state = state_with(3)
    assert masked(state.transcript, 10) == state.transcript
    assert all(m.content.startswith("[") for m in masked(state.transcript, 0) if m.role == "tool")


def test_pure_and_registered():
    state = state_with(8)
    a, b = make_strategy({"name": "masking"}).build(state), make_strategy({"name": "masking"}).build(state)
    assert [m.to_dict() for m in a.messages] == [m.to_dict() for m in b.messages]
    assert make_strategy({"name": "masking", "keep_recent_turns": 3}).config.keep_recent_turns == 3


def test_over_the_budget_the_oldest_turns_go_like_raw():
    state = state_with(40)
    full = MaskingStrategy(MaskingConfig(keep_recent_turns=1)).build(state).tokens
    built = MaskingStrategy(MaskingConfig(keep_recent_turns=1)).build(
        state_with(40, window=full - 200 + state.max_output)
    )
    assert built.dropped > 0 and built.tokens <= full - 200
    assert built.messages[len(stable_prefix(state.task))] == state.transcript[0]  # the step notice is pinned


@pytest.mark.parametrize("bad", [-1, "3", True])
def test_bad_config_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="keep_recent_turns"):
        MaskingConfig(keep_recent_turns=bad)
    with pytest.raises(RuntimeError, match="never compacts"):
        MaskingStrategy().summary_request(state_with(1))
