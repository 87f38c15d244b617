"""The instrument's appendix on hand-made trial tables with known answers."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from analysis.measures import appendix


def trials(outcome, **extra) -> pd.DataFrame:
    """Two strategies x two arms x four task seeds; success = outcome(strategy, arm, seed)."""
    rows = []
    for strategy, arm, seed in itertools.product(("raw", "ledger"), ("baseline", "drift"), range(4)):
        rows.append(
            {
                "strategy": strategy,
                "arm": arm,
                "task_family": "f",
                "task_seed": seed,
                "rep": 0,
                "model": "sim",
                "study": "s",
                "success": outcome(strategy, arm, seed),
                "first_attempt_pass_rate": 0.5 if arm == "drift" else 1.0,
                "stale_edits": float(arm == "drift"),
                "invariant_recall": 1.0,
                "tidy_ups": 0.0,
                "recovered_failures": 0.0,
                "turns_to_recover": 0.0,
                "trap_hazard": 0.5,
                **extra,
            }
        )
    return pd.DataFrame(rows)


def test_recovery_means_per_cell():
    r = appendix.recovery(trials(lambda s, a, k: 1))
    row = r[(r.strategy == "raw") & (r.arm == "drift")].iloc[0]
    assert (row.n, row.first_attempt_pass_rate, row.stale_edits) == (4, 0.5, 1.0)
    assert list(r.strategy[:2]) == ["raw", "raw"]  # the design's order, not alphabetical


def test_expected_against_observed_with_a_wilson_interval():
    e = appendix.expected_vs_observed(trials(lambda s, a, k: int(k < 2)))
    assert set(e.observed) == {0.5} and set(e.expected) == {0.5} and set(e.within_ci) == {"yes"}
    assert appendix.expected_vs_observed(trials(lambda s, a, k: 1).drop(columns="trap_hazard")).empty


def test_seed_share_separates_task_from_cell():
    by_task = appendix.seed_share(trials(lambda s, a, k: int(k % 2 == 0)))
    assert by_task["task_eta2"] == pytest.approx(1.0) and by_task["cell_eta2"] == pytest.approx(0.0)
    assert (by_task["tasks_always_succeed"], by_task["tasks_always_fail"]) == (2, 2)
    by_cell = appendix.seed_share(trials(lambda s, a, k: int(s == "ledger")))
    assert by_cell["task_eta2"] == pytest.approx(0.0) and by_cell["cell_eta2"] == pytest.approx(1.0)
    assert by_cell["tasks_always_succeed"] == 0 and by_cell["tasks_certain_by_construction"] == 0
    certain = appendix.seed_share(trials(lambda s, a, k: 1, trap_hazard=0.0))
    assert certain["tasks_certain_by_construction"] == 4


def test_ablations_pair_each_switch_with_all_on():
    on = trials(lambda s, a, k: int(k != 0))
    off = trials(lambda s, a, k: 1).assign(**{"param.model.mechanisms.temptation": "False"})
    drift = trials(lambda s, a, k: int(k != 0)).assign(**{"param.arm.drift_kinds": "['new_caller']"})
    t = pd.concat([on.assign(**{"param.model.mechanisms.temptation": "True"}), off, drift], ignore_index=True)
    a = appendix.ablations(t).set_index("switched off")
    assert a.loc["temptation", "n pairs"] == 16 and a.loc["temptation", "outcome changed"] == 4
    assert a.loc["temptation", "success on → off"] == "0.75 → 1.00"
    assert a.loc["drift_kinds=['new_caller']", "outcome changed"] == 0
    assert appendix.ablations(on).empty  # nothing switched off: no table


def test_invariants_from_side_by_side_and_named_in_the_variant():
    harness = trials(lambda s, a, k: 1, **{"param.strategy.invariants_from": "harness"})
    model = trials(lambda s, a, k: int(k < 3), **{"param.strategy.invariants_from": "model"})
    t = pd.concat([harness, model], ignore_index=True)
    side = appendix.invariants_from(t)
    got = side[(side.strategy == "ledger") & (side.arm == "drift")].set_index("source")["success"]
    assert (got["harness"], got["model"]) == (1.0, 0.75)
    assert set(appendix.variant(t)) == {"raw", "ledger", "ledger:harness"}


def test_a_trial_recorded_before_the_default_changed_carried_the_harness_invariants():
    old = trials(lambda s, a, k: 1)  # no param.strategy.invariants_from: the old default, harness
    assert set(appendix.variant(old)) == {"raw", "ledger:harness"}
    assert set(appendix.invariants_from(old)["source"]) == {"harness"}
