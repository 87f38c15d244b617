"""Task family as a level: per-family effects, Cochran's Q across families, the variance split."""

from __future__ import annotations

import itertools
import math

import pandas as pd
import pytest

from analysis.fairness import families

FAMILIES = ("fa", "fb", "fc")


def grid(rate, seeds=range(20), reps=(0,)) -> pd.DataFrame:
    """Balanced trials; rate(strategy, arm, family, seed, rep) -> 0/1."""
    rows = [
        {
            "study": "s",
            "model": "sim",
            "task_family": f,
            "task_seed": k,
            "sensitivity_point": "",
            "rep": r,
            "strategy": s,
            "arm": a,
            "success": int(rate(s, a, f, k, r)),
        }
        for s, a, f, k, r in itertools.product(
            ("raw", "ledger"), ("baseline", "drift"), FAMILIES, seeds, reps
        )
    ]
    return pd.DataFrame(rows)


def test_per_family_differences_and_a_family_going_the_other_way_is_heterogeneous():
    # ledger wins in fa and fb by 0.5, loses in fc by 0.5
    def rate(s, a, f, k, r):
        if s == "raw":
            return k % 2 if f != "fc" else 1
        return 1 if f != "fc" else k % 2

    fam = families.per_family(grid(rate))
    got = fam[fam["arm"] == "drift"].set_index("family")["diff"].to_dict()
    assert got == {"fa": 0.5, "fb": 0.5, "fc": -0.5}
    het = families.heterogeneity(fam).set_index("arm")
    assert het.loc["drift", "p"] < 0.001 and het.loc["drift", "I2"] > 0.8 and het.loc["drift", "df"] == 2


def test_the_same_effect_in_every_family_is_not_heterogeneous():
    fam = families.per_family(grid(lambda s, a, f, k, r: 1 if s == "ledger" else k % 2))
    het = families.heterogeneity(fam)
    assert (het["p"] > 0.99).all() and (het["I2"] == 0).all()
    assert het["pooled_diff"].tolist() == pytest.approx([0.5, 0.5])


def test_variance_shares_add_up_and_find_the_term_that_carries_it():
    t = grid(lambda s, a, f, k, r: 1 if s == "ledger" else 0, seeds=range(4), reps=(0, 1))
    v = families.variance(t).set_index("term")["share"]
    assert v.sum() == pytest.approx(1.0) and v["strategy"] == pytest.approx(1.0)
    t = grid(lambda s, a, f, k, r: 1 if (s == "ledger") == (a == "drift") else 0, seeds=range(4), reps=(0, 1))
    v = families.variance(t).set_index("term")["share"]
    assert v["strategy x arm"] == pytest.approx(1.0) and v["strategy"] == pytest.approx(0.0)
    out = families.variance(t)
    assert out.attrs["balanced"] and out.attrs["reps"] == 2


def test_seed_icc_is_zero_when_reps_are_luck_and_one_when_they_repeat():
    luck = grid(lambda s, a, f, k, r: (k + r) % 2, seeds=range(10), reps=(0, 1))
    same = grid(lambda s, a, f, k, r: k % 2, seeds=range(10), reps=(0, 1))
    assert (
        families.variance(luck).attrs["seed_icc"] <= 0.0 and families.variance(same).attrs["seed_icc"] > 0.99
    )


def test_a_family_with_all_its_pairs_one_way_does_not_take_all_the_weight():
    # fa: ledger wins both pairs (d = 1, Connor variance 0); fb: no difference
    t = grid(lambda s, a, f, k, r: 0 if (s == "raw" and f == "fa") else 1, seeds=range(2))
    het = families.heterogeneity(families.per_family(t[t["task_family"] != "fc"]))
    assert 0.2 < het["pooled_diff"].iloc[0] < 0.8


def test_seed_within_family_is_its_own_term_and_not_estimable_with_one_seed():
    # success by seed parity only: every family has the same mean, so it is all seed within family
    t = grid(lambda s, a, f, k, r: k % 2, seeds=range(4), reps=(0, 1))
    v = families.variance(t).set_index("term")
    assert v.loc["seed (within family)", "share"] == pytest.approx(1.0) and v.loc[
        "family", "share"
    ] == pytest.approx(0.0)
    assert v.loc["seed (within family)", "df"] == 3 * (4 - 1) and v.loc["family", "df"] == 2
    assert v.loc["family", "F vs"] == "seed" and v.loc["strategy", "F vs"] == "residual"
    assert v["df"].sum() == len(t) - 1
    # one seed per family: seed has no degrees of freedom, so no share, and family says it holds it
    one = families.variance(
        grid(lambda s, a, f, k, r: int(f == "fa" or r == 1), seeds=(0,), reps=(0, 1))
    ).set_index("term")
    assert one.loc["seed (within family)", "df"] == 0 and math.isnan(one.loc["seed (within family)", "share"])
    assert one.loc["family (holds the seed too: 1 seed per family)", "share"] > 0
