"""The fairness page's headline: before and after on the same seeds, channels beside each strategy."""

from __future__ import annotations

import pandas as pd

from analysis.fairness import __main__ as fairness


def frame(rows):
    return pd.DataFrame([{"task_family": "f", "rep": 0, **r} for r in rows])


def test_before_and_after_on_the_same_seeds_with_the_channels_each_had():
    after = frame([{"strategy": "ledger", "arm": "drift", "task_seed": 1, "success": 1,
                    "param.strategy.invariants_from": "model", "param.strategy.tree": "True",
                    "param.strategy.drift_note": "True", "param.strategy.files_budget_tokens": "4000"},
                   {"strategy": "raw", "arm": "drift", "task_seed": 1, "success": 0}])
    before = frame([{"strategy": "ledger", "arm": "drift", "task_seed": s, "success": 1} for s in (1, 2)]
                   + [{"strategy": "raw", "arm": "drift", "task_seed": 2, "success": 1}])
    h = fairness.headline(after, before).set_index("strategy")
    assert h.loc["ledger", "n before"] == 1  # seed 2 is not in the after study: left out
    assert h.loc["ledger", "channels before"] == "ledger[files,tree,drift_note,harness_invariants]"
    assert h.loc["ledger", "channels after"] == "ledger[files,tree,drift_note]"
    assert pd.isna(h.loc["raw", "n before"]) and h.loc["raw", "rate after"] == 0
