"""The fairness page's headline: before and after on the same seeds, channels beside each strategy."""

from __future__ import annotations

import pandas as pd

from analysis.fairness import __main__ as fairness


def frame(rows):
    return pd.DataFrame([{"task_family": "f", "rep": 0, **r} for r in rows])


def test_before_and_after_on_the_same_seeds_with_the_channels_each_had():
    after = frame(
        [
            {
                "strategy": "ledger",
                "arm": "drift",
                "task_seed": 1,
                "success": 1,
                "param.strategy.invariants_from": "model",
                "param.strategy.tree": "True",
                "param.strategy.drift_note": "True",
                "param.strategy.files_budget_tokens": "4000",
            },
            {"strategy": "raw", "arm": "drift", "task_seed": 1, "success": 0},
        ]
    )
    before = frame(
        [{"strategy": "ledger", "arm": "drift", "task_seed": s, "success": 1} for s in (1, 2)]
        + [{"strategy": "raw", "arm": "drift", "task_seed": 2, "success": 1}]
    )
    h = fairness.headline(after, before).set_index("strategy")
    assert h.loc["ledger", "n before"] == 1  # seed 2 is not in the after study: left out
    assert h.loc["ledger", "channels before"] == "ledger[files,tree,drift_note,harness_invariants]"
    assert h.loc["ledger", "channels after"] == "ledger[files,tree,drift_note]"
    assert pd.isna(h.loc["raw", "n before"]) and h.loc["raw", "rate after"] == 0


def test_both_sides_are_cut_to_the_seeds_and_reps_they_share_and_each_is_set_against_raw():
    # after ran reps 0 and 1 on seeds 1-2; before only rep 0 of seeds 1-3: the columns compare rep 0 of seeds 1-2
    after = frame(
        [
            {"strategy": s, "arm": "drift", "task_seed": k, "rep": r, "success": int(s == "ledger" or r == 1)}
            for s in ("raw", "ledger")
            for k in (1, 2)
            for r in (0, 1)
        ]
    )
    before = frame(
        [
            {"strategy": s, "arm": "drift", "task_seed": k, "success": int(s == "ledger" or k == 3)}
            for s in ("raw", "ledger")
            for k in (1, 2, 3)
        ]
    )
    h = fairness.headline(after, before).set_index("strategy")
    assert h.loc["ledger", "n after"] == 2 and h.loc["ledger", "n before"] == 2
    assert h.loc["raw", "rate after"] == 0 and h.loc["raw", "rate before"] == 0
    assert h.loc["ledger", "vs raw after"] == 1 and h.loc["ledger", "vs raw before"] == 1
