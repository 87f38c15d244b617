"""ledger: stable prefix | brief rebuilt from durable state | this step's turns."""

from __future__ import annotations

from dataclasses import replace

from bench.core import render
from bench.core.tokens import count_text
from bench.core.types import Message
from strategies.base import Certified, StepHead, Summary, stable_prefix
from strategies.ledger import LedgerConfig, LedgerStrategy
from tasks.spec import Invariant
from tests.helpers import strategy_loop as fx

SECTIONS = [
    "STEP BRIEF for [step:s02]",
    "INVARIANTS ESTABLISHED BY COMPLETED STEPS",
    "REMAINING PLAN",
    "CERTIFIED",
    "TREE",
    "CURRENT STEP [step:s02]",
    "FILES",
]


def brief_of(built) -> str:
    return built.messages[2].content


def test_sections_in_order_and_markers_parse():
    s = fx.hand_state()
    built = LedgerStrategy().build(s)
    assert built.messages[:2] == stable_prefix(s.task) and built.stable == 2 and len(built.messages) == 3
    text = brief_of(built)
    positions = [text.index(h) for h in SECTIONS]
    assert positions == sorted(positions)
    assert render.parse_invariants(text) == [("n-s01-1", "mod_01 uses timeout= by keyword")]
    assert render.parse_current_step(text) == "s02"
    assert render.parse_check_results(text) == [("s01", True, None)]
    assert "on tree " + "a" * 12 in text and "must not undo: keep the shim" in text
    assert [(p, c) for p, _, c in render.parse_file_blocks(text)] == list(s.head.files)
    assert "HEAD " + "b" * 40 in text and "1234567 s01: done" in text
    assert (
        "[step:s03]" in text.split("REMAINING PLAN")[1]
        and "[step:s01]" not in text.split("REMAINING PLAN")[1]
    )
    assert "CONSISTENCY NOTE" not in text and "LAST FAILURE" not in text


def test_drift_and_last_failure_are_shown():
    s = fx.hand_state(
        last_failure="E   assert 1 == 2",
        head=replace(fx.hand_state().head, drift_note="HEAD moved aaaa -> bbbb (outside commit)"),
    )
    text = brief_of(LedgerStrategy().build(s))
    assert text.index("CURRENT STEP") < text.index("LAST FAILURE:\nE   assert 1 == 2") < text.index("FILES")
    assert text.rstrip().split("\n\n")[-1].startswith("CONSISTENCY NOTE")
    assert "HEAD moved aaaa -> bbbb (outside commit)" in text
    # a note the harness already headed is not headed twice
    own = (
        "CONSISTENCY NOTE: the repository changed since the last certified step, by commits not yours:\nabc x"
    )
    s = fx.hand_state(head=replace(fx.hand_state().head, drift_note=own))
    text = brief_of(LedgerStrategy().build(s))
    assert text.count("CONSISTENCY NOTE") == 1 and own in text


def test_tree_and_drift_note_are_switches():
    s = fx.hand_state(
        head=replace(fx.hand_state().head, drift_note="HEAD moved aaaa -> bbbb (outside commit)")
    )
    on = brief_of(LedgerStrategy().build(s))
    assert "TREE (read fresh" in on and "1234567 s01: done" in on and "CONSISTENCY NOTE" in on
    off = brief_of(LedgerStrategy(LedgerConfig(tree=False, drift_note=False)).build(s))
    assert "TREE (read fresh" not in off and "1234567 s01: done" not in off and "CONSISTENCY NOTE" not in off
    assert "HEAD moved" not in off and "FILES" in off and "CURRENT STEP [step:s02]" in off


def test_only_this_steps_turns_follow_the_brief():
    s = fx.in_step(4, 2)
    built = LedgerStrategy().build(s)
    assert built.messages[3:] == s.transcript[s.step_start + 1 :]
    # the context is a function of durable state and this step's turns only
    other = fx.in_step(9, 0)
    other = replace(other, transcript=other.transcript + s.transcript[s.step_start + 1 :])
    assert LedgerStrategy().build(other).messages == built.messages


def test_files_budget_omits_files_by_path():
    s = fx.hand_state()
    text = brief_of(LedgerStrategy(LedgerConfig(files_budget_tokens=0)).build(s))
    assert render.parse_file_blocks(text) == []
    assert "Not shown (over the files budget" in text and "pkg/mod_02.py, pkg/mod_03.py" in text
    one = count_text(render.file_block(*s.head.files[0]))
    text = brief_of(LedgerStrategy(LedgerConfig(files_budget_tokens=one)).build(s))
    assert [p for p, _, _ in render.parse_file_blocks(text)] == ["pkg/mod_02.py"]
    small = replace(s, window=3000, max_output=1000)  # budget 2000: the fraction caps FILES at 700
    text = brief_of(LedgerStrategy(LedgerConfig(files_budget_fraction=0.1)).build(small))
    assert render.parse_file_blocks(text) == []


def test_notes_are_capped():
    long = "do not remove the shim " * 50
    s = fx.hand_state(
        certified=(Certified("s01", "true", "c" * 40, long, ""),),
        learned=(Invariant("n-s01-1", long, stated="s01"),),
    )
    text = brief_of(LedgerStrategy(LedgerConfig(notes_cap_chars=60)).build(s))
    line = next(ln for ln in text.splitlines() if ln.startswith("[check:s01"))
    assert line.endswith("…") and len(line.split("must not undo: ")[1]) == 60
    assert len(render.parse_invariants(text)[0][1]) == 60


def test_empty_ledger_at_the_first_step():
    task = fx.make_task(n_steps=2)
    s = fx.hand_state(
        task,
        step_index=0,
        certified=(),
        learned=(),
        transcript=(Message(role="user", content=render.current_step_block(task.steps[0])),),
        head=StepHead(tree="", files=(), repo_commit="0" * 40),
    )
    text = brief_of(LedgerStrategy().build(s))
    assert text.count("(none yet)") == 2 and "(clean)" in text and "FILES" in text


def test_backstop_compacts_only_this_steps_turns():
    s = fx.in_step(6, 4, size=150)
    st = LedgerStrategy(LedgerConfig(prompt="Summarise.\n[compaction-request]"))
    full = st.build(s).tokens
    s = replace(s, window=int(full / 0.75) - 5 + s.max_output)
    built = st.build(s)
    assert built.compact and built.tokens == full
    req = st.summary_request(s)
    assert req[:3] == st.build(s).messages[:3]  # prefix + brief
    body = req[3].content
    assert body.startswith("TRANSCRIPT TO SUMMARISE OF THIS STEP")
    assert "out6 " in body and "out8 " in body and "out9 " not in body and "out5 " not in body
    assert req[-1].content == "Summarise.\n[compaction-request]"
    summary = Summary("STEP-SUMMARY", upto=len(s.transcript))
    assert summary.upto > s.step_start
    after = st.build(replace(s, summary=summary))
    assert not after.compact
    assert after.messages[3].content.startswith("SUMMARY OF EARLIER TURNS OF THIS STEP")
    assert after.messages[4:] == s.transcript[-2:]
    # at the next step, that summary no longer applies: the brief starts afresh
    nxt = replace(
        s,
        summary=summary,
        transcript=s.transcript + (s.transcript[s.step_start],),
        step_start=len(s.transcript),
    )
    assert len(st.build(nxt).messages) == 3


def test_backstop_keep_zero_and_no_compaction_at_the_head():
    s = fx.in_step(0, 3, size=400, window=3000, max_output=1000)
    st = LedgerStrategy(LedgerConfig(keep_recent_turns=0, threshold=0.1))
    assert st.build(s).compact
    after = st.build(replace(s, summary=Summary("X", upto=len(s.transcript))))
    assert not after.compact and len(after.messages) == 4
    head_only = replace(s, transcript=s.transcript[:1])
    assert not st.build(head_only).compact  # nothing of the step to summarise yet
