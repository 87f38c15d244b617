"""Properties every strategy must have, on scripted runs through the real loop
(tests/helpers/strategy_loop.py: bench.trial.driver.StepDriver with bench.trial.loop.LoopPlayer, the scripted provider, LocalSandbox):
9 steps for the ten traces every property reads, 12 where the growth with the steps is the claim."""

from __future__ import annotations

import copy

import pytest

from bench.core import render
from bench.core.tokens import count_messages
from ctxlog import events as ev
from strategies import STRATEGIES, make_strategy
from tests.helpers import strategy_loop as fx

# 9 steps hold every case the traces need: the drift before s05, the failed first submit of s07,
# three compactions in the small window, and s09, the step after the shim invariant's end (s08),
# that establishes one (every third step). Steps 10-12 repeated that pattern at 1/4 of the cost.
TASK = fx.make_task(n_steps=9)
LONG = fx.make_task(n_steps=12)  # ledger-flat-raw-grows: raw's head is > 6x its first by step 12
SMALL, BIG = 5000, 200_000


def dicts(messages):
    return [m.to_dict() for m in messages]


@pytest.fixture(scope="module", params=sorted(STRATEGIES))
def name(request):
    return request.param


@pytest.fixture(scope="module")
def traces():
    out = {}
    for n in STRATEGIES:
        for window in (SMALL, BIG):
            out[n, window] = fx.run(
                make_strategy({"name": n}), TASK, window=window, drift_before="s05", fail_first="s07"
            )
    return out


@pytest.mark.parametrize("window", [SMALL, BIG])
def test_pure_same_state_same_bytes(name, window, traces):
    strategy = make_strategy({"name": name})
    for state, built in zip(traces[name, window].states, traces[name, window].builts, strict=True):
        again = strategy.build(state)
        other = make_strategy({"name": name}).build(copy.deepcopy(state))
        assert dicts(again.messages) == dicts(built.messages) == dicts(other.messages)
        assert (again.stable, again.tokens, again.dropped) == (built.stable, built.tokens, built.dropped)


@pytest.mark.parametrize("window", [SMALL, BIG])
def test_stable_prefix_is_byte_identical_across_turns_and_holds_policy(name, window, traces):
    builts = traces[name, window].builts
    first = dicts(builts[0].messages[: builts[0].stable])
    assert builts[0].stable == 2
    for b in builts:
        assert dicts(b.messages[: b.stable]) == first
        system, task = b.messages[0].content, b.messages[1].content
        assert "POLICY" in system and "tests/**" in system
        assert render.parse_task_id(task) == TASK.task_id
        assert [i for i, _ in render.parse_invariants(task)] == ["shim", "no-print"]


@pytest.mark.parametrize("window", [SMALL, BIG])
def test_context_is_well_formed(name, window, traces):
    tr = traces[name, window]
    for state, b in zip(tr.states, tr.builts, strict=True):
        assert b.tokens == count_messages(b.messages)
        seen: set[str] = set()
        for m in b.messages:  # never a tool result without its call
            if m.role == "assistant":
                seen |= {c.id for c in m.tool_calls}
            if m.role == "tool":
                assert m.tool_call_id in seen
        # the model always sees the current step, and it is the last CURRENT STEP header
        assert render.parse_current_step("\n".join(m.content for m in b.messages)) == state.step.id
        if b.dropped:
            assert b.tokens_before_drop > b.tokens


def test_small_window_raw_truncates_compaction_compacts(traces):
    raw, comp = traces["raw", SMALL], traces["compaction", SMALL]
    assert sum(b.dropped for b in raw.builts) > 0 and not raw.compactions
    assert len(comp.compactions) >= 3 and sum(b.dropped for b in comp.builts) == 0
    # the window less the tool schemas (bench/trial/context_window.py)
    budget = {s.turn: s.budget for s in comp.states}
    for turn, before, after in comp.compactions:
        assert before > 0.75 * budget[turn] > after
    assert all(b.tokens <= s.budget for tr in (raw, comp) for s, b in zip(tr.states, tr.builts, strict=True))
    assert max(s.budget for s in raw.states) <= SMALL - 1000


def test_after_a_compaction_the_step_files_are_read_fresh(traces):
    """The real loop re-reads FILES after a compaction (head_refresh), which the old scripted
    harness did not: the state built after it holds the step's files as they are now."""
    comp = traces["compaction", SMALL]
    refreshed = [e for e in comp.log.of(ev.HeadRefresh)]
    assert refreshed, "no compaction in the middle of a step's edits"
    for e in refreshed:
        (state,) = [s for s in comp.states if s.turn == e.turn]
        assert [list(f) for f in state.head.files] == e.files
        assert any("call 0, s" in content for _, content in state.head.files)  # the step's own edit


def test_big_window_nobody_truncates_or_compacts(name, traces):
    tr = traces[name, BIG]
    assert not tr.compactions and not tr.requests
    assert all(b.dropped == 0 and not b.compact for b in tr.builts)


def test_ledger_flat_raw_grows():
    """Context tokens at each step head: raw grows with every step, ledger stays flat."""
    raw = fx.run(make_strategy({"name": "raw"}), LONG, window=BIG)
    led = fx.run(make_strategy({"name": "ledger"}), LONG, window=BIG)
    raw_heads = [raw.builts[t].tokens for t in raw.step_heads]
    led_heads = [led.builts[t].tokens for t in led.step_heads]
    assert all(b > a + 1000 for a, b in zip(raw_heads, raw_heads[1:], strict=False))
    assert raw_heads[-1] > 6 * raw_heads[1]  # linear in the number of steps
    # the ledger only grows by a line or two per passed step (certified line, learned invariants)
    assert max(b - a for a, b in zip(led_heads, led_heads[1:], strict=False)) < 150
    assert led_heads[-1] < 2 * led_heads[0]
    assert led_heads[-1] < raw_heads[-1] / 5
    # within a step the ledger grows only by that step's turns, then resets at the next head
    per_step = [led.builts[t].tokens for t in range(led.step_heads[5], led.step_heads[6] + 1)]
    assert per_step[-1] < per_step[-2]
