"""analysis.power against published sample-size values and brute-force simulation.

Published values (each test names its source and the exact entry):
- G*Power 3.1 manual (Faul, Erdfelder, Buchner & Lang), ch. 5 "Proportions: inequality, two
  dependent groups (McNemar)", example after O'Brien (2002): odds ratio 0.25, proportion of
  discordant pairs 0.4, N = 50, one-sided alpha 0.05, exact: power 0.839343. G*Power stops the
  outer sum once its terms are negligible; the full sum is 0.839357 (pwrss reports this value).
- G*Power 3.1 manual, ch. 19 "Means: difference between two dependent means (matched pairs)":
  d_z = 0.421637, N = 50, two-sided alpha 0.05: power 0.832114; d_z = 0.2828427: 0.500352.
- pwrss (R, "validated using the PASS documentation and G*Power"), tests/testthat/
  test-proportions.mcnemar.R, power.exact.mcnemar(prob10 = 0.20, prob01 = 0.10, ...):
  n = 100 two-sided exact 0.373077084, one-sided 0.514606143; power 0.80 two-sided -> 249 pairs
  with power 0.801446921.
- MESS (R), tests/testthat/testpowermcnemar.R: power_mcnemar_test(144, paid = 0.25,
  psi = 45/25, method = "exact", alternative = "one.sided", sig.level = 0.025) rounds to 0.80;
  power_mcnemar_test(paid = 0.05, psi = 45/5, power = 0.8) (normal) rounds to n = 22.
- Chow, Shao & Wang (2003) Sample Size Calculations in Clinical Research, Example 6.4.3 (as
  TrialSize::McNemar.Test(0.05, 0.2, 0.2/0.5, 0.7)): p01/p10 = 0.2/0.5, p_D = 0.7 -> 59 pairs.

Simulation tolerances: a rejection rate from R independent draws has SE sqrt(p(1-p)/R);
checks allow 4 SE (a false alarm about once in 16,000 runs) and every draw is seeded.
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest
from scipy import stats as st

from analysis.power import sizing as P
from analysis.stats.inference import mcnemar_exact


def test_gpower_manual_mcnemar_obrien_example():
    # p12 = 0.08, p21 = 0.32: OR = 0.25, p_D = 0.4; one-sided in the effect's direction.
    assert P.mcnemar_power(50, 0.08, 0.32, 0.05, sides=1) == pytest.approx(0.839343, abs=2e-5)
    assert P.mcnemar_power(50, 0.08, 0.32, 0.05, sides=1) == pytest.approx(0.839357, abs=1e-6)


def test_pwrss_exact_mcnemar():
    assert P.mcnemar_power(100, 0.20, 0.10) == pytest.approx(0.373077084, abs=1e-9)
    assert P.mcnemar_power(100, 0.20, 0.10, sides=1) == pytest.approx(0.514606143, abs=1e-9)
    assert P.mcnemar_power(249, 0.20, 0.10) == pytest.approx(0.801446921, abs=1e-9)
    assert P.mcnemar_n(0.20, 0.10) == 249
    assert P.mcnemar_power(248, 0.20, 0.10) < 0.8  # 249 is the smallest


def test_mess_exact_and_normal():
    assert round(P.mcnemar_power(144, 0.45, 0.25, 0.025, sides=1), 2) == 0.80
    assert round(P.mcnemar_n_approx(0.45, 0.05)) == 22


def test_chow_shao_wang_example_6_4_3():
    # psi = p01/p10 = 0.2/0.5 with p10 + p01 = 0.7: p10 = 0.5, p01 = 0.2
    assert math.ceil(P.mcnemar_n_approx(0.5, 0.2)) == 59


def test_gpower_manual_matched_pairs_t():
    # ARE = 1 turns the signed-rank rule into the paired t test itself.
    assert P.paired_power(50, 0.421637, 1.0, are=1.0) == pytest.approx(0.832114, abs=1e-6)
    assert P.paired_power(50, 0.2828427, 1.0, are=1.0) == pytest.approx(0.500352, abs=1e-6)


@pytest.mark.parametrize("alpha", [0.05, 0.05 / 12, 0.01, 2 / 64])  # 2/64: p exactly at alpha (d = 6)
def test_rejection_bound_is_the_reports_test(alpha):
    for d in range(0, 61):
        k = P.rejection_bound(d, alpha)
        for b in range(d + 1):
            assert (min(b, d - b) <= k) == (mcnemar_exact(b, d - b) <= alpha * (1 + 1e-12)), (d, b, alpha)


def test_exact_power_equals_enumeration_of_every_table():
    n, p10, p01, alpha = 12, 0.3, 0.1, 0.05
    total = 0.0
    for b, c in product(range(n + 1), repeat=2):
        if b + c <= n and mcnemar_exact(b, c) <= alpha:
            total += (
                math.factorial(n)
                / (math.factorial(b) * math.factorial(c) * math.factorial(n - b - c))
                * p10**b
                * p01**c
                * (1 - p10 - p01) ** (n - b - c)
            )
    assert P.mcnemar_power(n, p10, p01, alpha) == pytest.approx(total, abs=1e-12)


@pytest.mark.parametrize(
    "n,p10,p01,alpha", [(60, 0.30, 0.10, 0.05), (200, 0.12, 0.05, 0.05 / 12), (25, 0.4, 0.1, 0.05)]
)
def test_exact_power_matches_simulation(n, p10, p01, alpha):
    rng = np.random.default_rng(7)
    counts = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=8000)
    b, c = counts[:, 0], counts[:, 1]
    p = np.where(b + c > 0, np.minimum(1.0, 2 * st.binom.cdf(np.minimum(b, c), b + c, 0.5)), 1.0)
    sim = float((p <= alpha).mean())
    exact = P.mcnemar_power(n, p10, p01, alpha)
    assert abs(sim - exact) < 4 * math.sqrt(exact * (1 - exact) / 8000)


def test_connor_agrees_with_exact_when_discordant_pairs_are_many():
    # Many expected discordant pairs: the approximation is close; few: it is not.
    for n, p10, p01 in [(2000, 0.12, 0.08), (800, 0.3, 0.2)]:
        assert abs(P.mcnemar_power_approx(n, p10, p01) - P.mcnemar_power(n, p10, p01)) < 0.03
        assert P.mcnemar_n_approx(p10, p01) == pytest.approx(P.mcnemar_n(p10, p01), rel=0.05)
    assert abs(P.mcnemar_power_approx(20, 0.2, 0.0) - P.mcnemar_power(20, 0.2, 0.0)) > 0.1


def test_sample_size_is_the_smallest_reaching_the_target():
    for p10, p01, alpha in [(0.4, 0.1, 0.05), (0.25, 0.05, 0.05 / 6), (0.3, 0.0, 0.05)]:
        n = P.mcnemar_n(p10, p01, alpha)
        assert P.mcnemar_power(n, p10, p01, alpha) >= 0.8
        assert all(P.mcnemar_power(m, p10, p01, alpha) < 0.8 for m in range(1, n))


def test_sample_size_refuses_no_difference_and_impossible_targets():
    with pytest.raises(ValueError, match="no difference"):
        P.mcnemar_n(0.1, 0.1)
    with pytest.raises(ValueError, match="p10"):
        P.mcnemar_power(10, 0.7, 0.6)


def test_mde_round_trip_and_edges():
    for n, psi, alpha in [(40, 0.3, 0.05), (200, 0.1, 0.05 / 12), (30, 0.0, 0.05)]:
        mde = P.mcnemar_mde(n, psi, alpha)
        assert P.mcnemar_power(n, *P.split(psi, mde), alpha) >= 0.8
        assert P.mcnemar_power(n, *P.split(psi, mde - 1e-6), alpha) < 0.8
    # 3 pairs: even all three discordant one way gives p = 0.25 > 0.05
    assert P.mcnemar_mde(3, 0.0) == math.inf
    assert P.split(0.05, 0.2) == (pytest.approx(0.2), pytest.approx(0.0))  # psi raised to |delta|


def test_holm_first_step_and_design_effect():
    assert P.holm_alpha(0.05, 12) == pytest.approx(0.05 / 12)
    assert P.design_effect(3, 0.0) == 1 and P.design_effect(3, 1.0) == 3 and P.design_effect(4, 0.5) == 2.5
    assert P.effective_pairs(20, 3, 1.0) == pytest.approx(20)  # reps that add nothing: seeds only
    with pytest.raises(ValueError):
        P.design_effect(2, 1.5)


def test_icc_estimator_by_hand_and_undefined():
    assert P.icc_oneway([1, 1, -1, -1], [0, 0, 1, 1]) == 1.0  # all variation between seeds
    assert P.icc_oneway([1, -1, 1, -1], [0, 0, 1, 1]) == 0.0  # all within (clipped from below)
    assert math.isnan(P.icc_oneway([1, 0, 1], [0, 0, 0]))  # one seed
    assert math.isnan(P.icc_oneway([0, 0, 0, 0], [0, 0, 1, 1]))  # no variation at all
    assert math.isnan(P.icc_oneway([1, 0], [0, 1]))  # no seed with two pairs


def _clustered(rng, seeds, m, icc, p10, p01, reps):
    """Copy model: each seed draws an outcome, each rep keeps it with probability sqrt(icc),
    else redraws; marginals stay (p10, p01) and corr(rep, rep') = icc."""
    values, probs = np.array([1, -1, 0]), [p10, p01, 1 - p10 - p01]
    shared = values[rng.choice(3, p=probs, size=(reps, seeds, 1))]
    fresh = values[rng.choice(3, p=probs, size=(reps, seeds, m))]
    return np.where(rng.random((reps, seeds, m)) < math.sqrt(icc), shared, fresh)


def test_icc_estimator_recovers_the_correlation():
    # 1000 seeds x 3 reps: the estimate's SD over 400 repeats was 0.026; 4 SD allowed.
    rng = np.random.default_rng(3)
    for icc in (0.2, 0.5):
        z = _clustered(rng, 1000, 3, icc, 0.2, 0.1, 1)[0]
        assert P.icc_oneway(z.ravel(), np.repeat(np.arange(1000), 3)) == pytest.approx(icc, abs=0.105)


def test_effective_pairs_predict_a_clustered_test():
    """Seeds x reps with ICC 0.5: a test that respects the clusters (Durkalski et al. 2003:
    (sum_k b_k - c_k)^2 / sum_k (b_k - c_k)^2 ~ chi2(1)) has the power n_eff predicts, and
    counting the raw pairs would overstate it by far."""
    rng = np.random.default_rng(11)
    seeds, m, icc, p10, p01, reps = 60, 4, 0.5, 0.2, 0.1, 3000
    dk = _clustered(rng, seeds, m, icc, p10, p01, reps).sum(axis=2)
    den = (dk**2).sum(axis=1)
    stat = np.where(den > 0, dk.sum(axis=1) ** 2 / np.maximum(den, 1), 0.0)
    sim = float((st.chi2.sf(stat, 1) <= 0.05).mean())
    n_eff = P.effective_pairs(seeds, m, icc)
    predicted = P.mcnemar_power_approx(n_eff, p10, p01)  # asymptotic, like the clustered test
    assert abs(sim - predicted) < 4 * math.sqrt(predicted * (1 - predicted) / reps) + 0.02
    assert P.mcnemar_power_approx(seeds * m, p10, p01) - sim > 0.1


def test_signed_rank_power_by_simulation():
    """n sized by the ARE rule reaches the target: normal differences at ARE 3/pi, and
    heavy-tailed (Laplace) ones at the worst-case ARE 0.864 with room to spare."""
    rng = np.random.default_rng(5)
    for draw, are, at_least in [
        (lambda s: rng.standard_normal(s), P.ARE_NORMAL, False),
        (lambda s: rng.laplace(0, 1 / math.sqrt(2), s), P.ARE_MIN, True),
    ]:
        n = P.paired_n(0.5, 1.0, 0.05, 0.8, are)
        sim = float((st.wilcoxon(draw((2000, n)) + 0.5, axis=1).pvalue <= 0.05).mean())
        tol = 4 * math.sqrt(0.8 * 0.2 / 2000)
        assert sim > 0.8 - tol if at_least else abs(sim - 0.8) < tol, (n, sim)


def test_paired_sizes_and_mde():
    assert P.paired_n(0.5, 1.0, are=1.0) == 34  # the paired t test: d = 0.5, 80%, two-sided 0.05
    assert P.paired_n(0.5, 1.0) == math.ceil(33.367 / P.ARE_MIN)
    assert P.paired_n(-1000, 2000) == P.paired_n(1000, 2000)
    mde = P.paired_mde(60, 2000.0, 0.05 / 4)
    assert P.paired_power(60, mde, 2000.0, 0.05 / 4) == pytest.approx(0.8, abs=1e-6)
    assert math.isnan(P.paired_mde(1, 1.0)) and math.isnan(P.paired_power(10, 1.0, 0.0))
    with pytest.raises(ValueError):
        P.paired_n(0.0, 1.0)


@pytest.mark.parametrize("d", [40.0, 1e-4])
def test_paired_n_where_the_root_finder_gives_up(d):
    """A pilot's latency can differ by 40 SDs and statsmodels returns nan there, as it does for a
    shift so small that it needs millions: the answer is still the smallest n that reaches the
    power, and never below the signed-rank floor, where 2 / 2**n > alpha and nothing can reject."""
    alpha = 0.004
    floor = P.signed_rank_floor(alpha)
    assert 2 / 2**floor <= alpha < 2 / 2 ** (floor - 1)
    n = P.paired_n(d, 1.0, alpha)
    assert n >= floor and P.paired_power(n, d, 1.0, alpha) >= 0.8 - 1e-9
    if n > floor:
        assert P.paired_power(n - 1, d, 1.0, alpha) < 0.8
    assert P.paired_power(floor - 1, d, 1.0, alpha) == 0.0 and math.isnan(P.paired_mde(floor - 1, 1.0, alpha))
