"""analysis.power.pilot: what one comparison's pairs say (discordance, ICC, effective pairs)."""

from __future__ import annotations

import math

import pytest

from analysis.power import pilot
from analysis.power import sizing as P


def test_binary_counts_and_rates():
    d = pilot.binary([1, 1, 0, 1, 0, 1], [0, 1, 1, 1, 0, 0], ["a", "a", "b", "b", "c", "c"])
    assert (d.b, d.c, d.pairs.n, d.pairs.seeds) == (2, 1, 6, 3)
    assert (d.p10, d.p01, d.psi) == (pytest.approx(2 / 6), pytest.approx(1 / 6), pytest.approx(0.5))
    assert d.pairs.per_seed == 2 and d.pairs.icc_note == "estimated"


def test_one_pair_per_seed_needs_no_correlation():
    d = pilot.binary([1, 0, 1], [0, 0, 1], [1, 2, 3])
    assert d.pairs.icc == 0 and d.pairs.n_eff == 3 and d.pairs.icc_note == "one pair per seed"


def test_unestimable_correlation_counts_seeds_only():
    # one seed, four reps: the reps cannot show how much seeds differ, so they count as one
    d = pilot.binary([1, 1, 0, 1], [0, 0, 0, 1], [7, 7, 7, 7])
    assert d.pairs.icc == 1 and d.pairs.icc_note.startswith("assumed")
    assert d.pairs.n_eff == pytest.approx(1)


def test_perfectly_shared_luck_is_one_pair_per_seed():
    # every seed's reps agree exactly: ICC 1, so 3 seeds x 2 reps are worth 3 pairs
    d = pilot.binary([1, 1, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1], [1, 1, 2, 2, 3, 3])
    assert d.pairs.icc == pytest.approx(1) and d.pairs.n_eff == pytest.approx(3)


def test_binary_power_uses_holm_first_step_and_n_eff():
    d = pilot.binary([1] * 30 + [0] * 30, [0] * 10 + [1] * 50, range(60))
    got = pilot.binary_power(d, 0.05, 4)
    assert got["power"] == pytest.approx(P.mcnemar_power(60, *P.split(d.psi, 0.10), 0.0125))
    assert got["mde"] == pytest.approx(P.mcnemar_mde(60, d.psi, 0.0125))
    assert all(math.isnan(v) for v in pilot.binary_power(pilot.binary([], [], []), 0.05, 1).values())


def test_continuous_mde():
    diffs = [100.0, -50.0, 300.0, 20.0, 80.0, 150.0, 100.0]
    c = pilot.continuous(diffs, [1, 2, 3, 4, 5, 6, 7])
    assert c.mean == pytest.approx(100) and c.pairs.n_eff == 7
    mde = pilot.continuous_mde(c, 0.05, 2)
    assert math.isfinite(mde) and mde == pytest.approx(P.paired_mde(7, c.sd, 0.025))
    # 6 pairs are below the signed-rank floor at 0.025 (2 / 2**6 > 0.025): no shift is detectable
    assert P.signed_rank_floor(0.025) == 7
    assert math.isnan(pilot.continuous_mde(pilot.continuous(diffs[:6], range(6)), 0.05, 2))
    assert math.isnan(pilot.continuous_mde(pilot.continuous([5.0, 5.0], [1, 2]), 0.05, 1))  # no spread
