"""subagent: a fresh conversation per step, seeded with a brief of ledger entries only."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.core import render
from strategies.base import Certified, stable_prefix
from strategies.subagent import SubagentConfig, SubagentStrategy
from tests.helpers import strategy_loop as fx
from tests.helpers.strategy_loop import in_step


def test_brief_holds_ledger_entries_but_no_files_or_tree():
    s = fx.hand_state(last_failure="E   boom")
    built = SubagentStrategy().build(s)
    assert built.messages[:2] == stable_prefix(s.task) and built.stable == 2 and len(built.messages) == 3
    text = built.messages[2].content
    order = [
        text.index(h)
        for h in (
            "SUBAGENT BRIEF for [step:s02]",
            "INVARIANTS ESTABLISHED",
            "REMAINING PLAN",
            "COMPLETED STEPS (ledger",
            "CURRENT STEP [step:s02]",
            "LAST FAILURE:\nE   boom",
        )
    ]
    assert order == sorted(order)
    assert render.parse_file_blocks(text) == [] and "TREE" not in text and "FILES" not in text
    assert render.parse_invariants(text) == [("n-s01-1", "mod_01 uses timeout= by keyword")]
    assert render.parse_check_results(text) == [("s01", True, None)]
    entry = text.split("COMPLETED STEPS (ledger")[1]
    assert "on tree " + "a" * 12 in entry and "notes: keep the shim" in entry
    assert "diffstat:\n    pkg/mod_01.py | 2 +-" in entry


def test_entries_capped_and_empty_diffstat():
    s = fx.hand_state(certified=(Certified("s01", "true", "d" * 40, "x " * 300, ""),))
    text = SubagentStrategy(SubagentConfig(notes_cap_chars=40)).build(s).messages[2].content
    notes = next(ln for ln in text.splitlines() if ln.startswith("  notes: "))
    assert len(notes) == len("  notes: ") + 40 and "diffstat: (no changes)" in text


def test_fresh_conversation_per_step_and_drift_note():
    s = in_step(5, 2)
    built = SubagentStrategy().build(s)
    assert built.messages[3:] == s.transcript[s.step_start + 1 :]
    s = replace(s, head=replace(s.head, drift_note="HEAD moved x -> y"))
    assert "CONSISTENCY NOTE" in SubagentStrategy().build(s).messages[2].content
    off = SubagentStrategy(SubagentConfig(drift_note=False)).build(s).messages[2].content
    assert "CONSISTENCY NOTE" not in off and "HEAD moved" not in off and "CURRENT STEP [step:s02]" in off


def test_truncates_this_steps_turns_like_raw():
    s = in_step(0, 6, size=300, window=3000, max_output=1000)
    built = SubagentStrategy().build(s)
    assert built.dropped > 0 and built.dropped % 2 == 0 and built.tokens <= s.budget
    assert built.messages[-2:] == s.transcript[-2:]
    assert render.parse_current_step(built.messages[2].content) == "s02"


def test_config_and_no_summary_request():
    with pytest.raises(ValueError):
        SubagentConfig(name="raw")
    with pytest.raises(RuntimeError):
        SubagentStrategy().summary_request(fx.hand_state())
