"""compaction: raw until threshold × budget, then a summary replaces history."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.core import render
from bench.core.tokens import count_messages
from bench.core.types import Message
from strategies import _common
from strategies._common import COMPACTION_MARKER
from strategies.base import Summary, stable_prefix
from strategies.compaction import CompactionConfig, CompactionStrategy
from tests.helpers import strategy_loop as fx

PROMPT = f"Write the handoff.\n{COMPACTION_MARKER}"


def state_with(n_before: int, n_after: int, size: int = 100, **kw):
    """n_before turns of step s01, then s02's notice, then n_after turns."""
    return fx.in_step(n_before, n_after, size, **kw)


def strat(**kw) -> CompactionStrategy:
    return CompactionStrategy(CompactionConfig(**kw))


def test_raw_context_below_threshold():
    s = state_with(2, 2)
    built = strat().build(s)
    assert built.messages == stable_prefix(s.task) + s.transcript
    assert not built.compact and built.dropped == 0


def test_threshold_asks_to_compact_then_summary_replaces_history():
    s = state_with(3, 2)
    full = strat().build(s).tokens
    s = replace(s, window=int(full / 0.75) - 10 + s.max_output)  # just over 75% of the budget
    st = strat(prompt=PROMPT)
    built = st.build(s)
    assert built.compact and built.tokens == full
    req = st.summary_request(s)
    assert req[:2] == stable_prefix(s.task) and req[-1] == Message(role="user", content=PROMPT)
    body = req[2].content
    assert body.startswith("TRANSCRIPT TO SUMMARISE")
    assert "out0 " in body and "out3 " in body and "out4 " not in body  # the last turn is kept verbatim
    assert "CURRENT STEP [step:s02]" in body and all(m.role != "tool" for m in req)
    # the harness stores the summary and builds again: no second request
    s2 = replace(s, summary=Summary("SUMMARY-TEXT", upto=len(s.transcript)))
    after = st.build(s2)
    assert not after.compact and after.tokens < 0.75 * s.budget
    msgs = after.messages
    assert msgs[:2] == stable_prefix(s.task)
    assert msgs[2].content.startswith("SUMMARY OF EARLIER TURNS") and msgs[2].content.endswith("SUMMARY-TEXT")
    assert msgs[3] == s.transcript[s.step_start]  # the notice was summarised away: shown again
    assert msgs[4:] == s.transcript[-2:]


def test_keep_recent_turns_zero_and_two():
    s = state_with(3, 3)
    for keep, tail in ((0, ()), (2, s.transcript[-4:])):
        st = strat(keep_recent_turns=keep)
        s2 = replace(s, summary=Summary("S", upto=len(s.transcript)))
        msgs = st.build(s2).messages
        assert msgs[4:] == tail
        assert render.parse_current_step("\n".join(m.content for m in msgs)) == "s02"


def test_notice_not_repeated_when_still_in_the_tail():
    s = state_with(3, 2)  # compacted in step s01 (before the notice was appended), keeping 1 turn
    s2 = replace(s, summary=Summary("S", upto=s.step_start))
    msgs = strat().build(s2).messages
    assert msgs[3:] == s.transcript[s.step_start - 2 :]
    assert [m.content for m in msgs].count(s.transcript[s.step_start].content) == 1


def test_force_at_turns_compacts_under_threshold_once():
    s = state_with(1, 1, turn=7)
    assert not strat().build(s).compact
    st = strat(force_at_turns=(3, 7))
    assert st.build(s).compact
    assert not st.build(replace(s, turn=8)).compact
    done = replace(s, summary=Summary("S", upto=len(s.transcript)))
    assert not st.build(done).compact  # same turn, already compacted: no second request
    empty = replace(s, transcript=s.transcript[:1], step_start=0)
    assert not st.build(empty).compact  # nothing to summarise


def test_second_compaction_summarises_previous_summary_and_new_turns():
    s = state_with(2, 2)
    first = Summary("FIRST-SUMMARY", upto=len(s.transcript))
    s = replace(s, summary=first, transcript=s.transcript + fx.turn(10, 100) + fx.turn(11, 100), turn=20)
    st = strat(force_at_turns=(20,))
    assert st.build(s).compact
    body = st.summary_request(s)[2].content
    assert body.startswith("PREVIOUS SUMMARY\n\nFIRST-SUMMARY")
    assert "out3 " in body and "out10 " in body and "out11 " not in body and "out2 " not in body
    s2 = replace(s, summary=Summary("SECOND", upto=len(s.transcript)))
    msgs = st.build(s2).messages
    assert msgs[2].content.endswith("SECOND") and msgs[-2:] == fx.turn(11, 100)


def test_still_too_big_after_summary_drops_oldest_tail_turns():
    s = state_with(1, 3, size=600, window=2600, max_output=1000)
    st = strat(keep_recent_turns=2)
    s2 = replace(s, summary=Summary("S", upto=len(s.transcript)))
    built = st.build(s2)
    assert built.dropped == 2 and built.messages[-2:] == s.transcript[-2:]
    assert built.messages[3] == s.transcript[s.step_start]


def test_summary_request_fits_the_budget():
    s = state_with(6, 2, size=400, window=2500, max_output=500)
    req = strat().summary_request(s)
    assert sum(len(m.content) for m in req) < 2000 * 5
    assert "older messages left out to fit the window" in req[2].content
    assert count_messages(req) <= s.budget


def test_trigger_waits_until_a_compaction_frees_real_room():
    """Past the threshold, compact only once the turns to summarise hold half the headroom;
    past the budget, compact whatever there is."""
    s = state_with(0, 3, size=100)
    gain = _common.compactable_tokens(s, 0, 1)  # the notice and the first two turns
    assert gain > 0
    budget = 4 * gain  # headroom at threshold 0.75 = gain: half of it is enough
    s = replace(s, window=budget + s.max_output)
    assert _common.should_compact(s, int(0.8 * budget), 0.75, 0, 1)
    s = replace(s, window=12 * gain + s.max_output)  # headroom 3 × gain: not yet worth a call
    assert not _common.should_compact(s, int(0.8 * s.budget), 0.75, 0, 1)
    assert _common.should_compact(s, s.budget + 1, 0.75, 0, 1)  # over the budget: compact anyway
    assert _common.should_compact(s, 10, 0.75, 0, 1, forced=True)
    assert not _common.should_compact(replace(s, transcript=s.transcript[:1]), 10**6, 0.75, 0, 1)


def test_a_summary_past_the_transcript_is_a_harness_bug():
    s = state_with(1, 1)
    with pytest.raises(ValueError, match="outside the transcript"):
        strat().build(replace(s, summary=Summary("S", upto=len(s.transcript) + 1)))
