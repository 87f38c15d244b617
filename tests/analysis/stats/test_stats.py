"""Each statistic against a published or hand-computable value, never against itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from analysis.stats import inference as stats


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        # Newcombe (1998), Stat Med 17:857, Table I, method 3 (score interval, no continuity correction).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_newcombe_1998(k, n, lo, hi):
    got = stats.wilson(k, n)
    assert got == pytest.approx((lo, hi), abs=5e-5)


def test_wilson_edges():
    assert stats.wilson(0, 10)[0] == 0.0
    assert stats.wilson(10, 10)[1] == 1.0
    assert all(math.isnan(x) for x in stats.wilson(0, 0))


def test_mcnemar_exact_fagerland_2013():
    # Fagerland, Lydersen & Laake (2013), BMC Med Res Methodol 13:91: airway
    # hyper-responsiveness before/after stem cell transplantation (Bentur et al.),
    # discordant pairs 1 and 7; exact conditional p = 0.0703 (= 18/256).
    assert stats.mcnemar_exact(1, 7) == pytest.approx(0.0703, abs=5e-5)
    assert stats.mcnemar_exact(7, 1) == stats.mcnemar_exact(1, 7)


def test_mcnemar_exact_by_hand():
    assert stats.mcnemar_exact(0, 5) == pytest.approx(2 / 32)  # 2 * 0.5**5
    assert stats.mcnemar_exact(1, 9) == pytest.approx(22 / 1024)  # 2 * (1 + 10) / 2**10
    assert stats.mcnemar_exact(3, 3) == 1.0
    assert stats.mcnemar_exact(0, 0) == 1.0


def test_holm_wikipedia_example():
    # Holm–Bonferroni worked example: four hypotheses, alpha 0.05; H4 and H1 rejected.
    adj = stats.holm([0.01, 0.04, 0.03, 0.005])
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert list(adj < 0.05) == [True, False, False, True]


def test_holm_monotone_capped_and_nan():
    adj = stats.holm([0.01, 0.02, 0.03, 0.04, 0.05])
    assert adj == pytest.approx([0.05, 0.08, 0.09, 0.09, 0.09])  # hand: 5p, 4p, 3p, max(2p, .), max(p, .)
    adj = stats.holm([0.5, float("nan"), 0.6])
    assert math.isnan(adj[1]) and adj[0] == pytest.approx(1.0) and adj[2] == pytest.approx(1.0)


def test_wilcoxon_hollander_wolfe():
    # Hollander & Wolfe (1973), p. 29: Hamilton depression scale before (x) and after (y)
    # tranquilizer; R's ?wilcox.test reports V = 40, one-sided p = 0.01953.
    x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
    y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
    w, p = stats.wilcoxon_paired(x, y)
    assert 9 * 10 / 2 - w == 40  # two-sided statistic is min(T+, T-) = 5, so T+ = 40
    assert p == pytest.approx(2 * 0.01953, abs=1e-4)


def test_wilcoxon_no_difference():
    assert stats.wilcoxon_paired([1, 2, 3], [1, 2, 3]) == (0.0, 1.0)


def test_brown_forsythe_by_hand():
    # medians 2 and 3; |deviations| (1,0,1) and (2,0,2); one-way ANOVA on them gives
    # SSB = 2/3 on 1 df, SSW = 10/3 on 4 df, F = 0.8.
    f, p = stats.brown_forsythe([1, 2, 3], [1, 3, 5])
    assert f == pytest.approx(0.8)
    assert p == pytest.approx(1 - st.f.cdf(0.8, 1, 4))


def test_brown_forsythe_scipy_levene_docs_dataset():
    # The three-sample example of scipy.stats.levene's documentation (center='median',
    # i.e. Brown–Forsythe): statistic 7.584952754501659, p 0.002431505967249681.
    a = [8.88, 9.12, 9.04, 8.98, 9.00, 9.08, 9.01, 8.85, 9.06, 8.99]
    b = [8.88, 8.95, 9.29, 9.44, 9.15, 9.58, 8.36, 9.18, 8.67, 9.05]
    c = [8.95, 9.12, 8.95, 8.85, 9.03, 8.84, 9.07, 8.98, 8.86, 8.98]
    f, p = stats.brown_forsythe(a, b, c)
    assert f == pytest.approx(7.584952754501659, rel=1e-9)
    assert p == pytest.approx(0.002431505967249681, rel=1e-6)
    ref = st.levene(a, b, c, center="median")
    assert (f, p) == pytest.approx((ref.statistic, ref.pvalue))


def test_paired_bootstrap_degenerate_and_normal_theory():
    assert stats.paired_bootstrap_ci([3, 4, 5], [1, 2, 3]) == (2.0, 2.0)
    # 200 of 400 pairs differ by 1: normal theory 0.5 ± 1.96·0.5/20 = (0.451, 0.549).
    lo, hi = stats.paired_bootstrap_ci(np.r_[np.ones(200), np.zeros(200)], np.zeros(400))
    assert (lo, hi) == pytest.approx((0.451, 0.549), abs=0.006)


def test_paired_bootstrap_clusters_widen_interval():
    rng = np.random.default_rng(1)
    effect = np.repeat(rng.normal(0, 1, 20), 5)  # 20 tasks × 5 reps sharing their luck
    d = effect + rng.normal(0, 0.1, 100)
    flat = stats.paired_bootstrap_ci(d, np.zeros(100))
    clustered = stats.paired_bootstrap_ci(d, np.zeros(100), clusters=np.repeat(np.arange(20), 5))
    assert clustered[1] - clustered[0] > 1.8 * (flat[1] - flat[0])  # √5 ≈ 2.2 in theory
    ref = st.bootstrap((d,), np.mean, method="percentile", n_resamples=10_000, random_state=0)
    assert flat == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=0.03)


def _cells(successes):
    y, a, b, g = [], [], [], []
    for (s, arm), k in zip(
        [("raw", "base"), ("raw", "x"), ("led", "base"), ("led", "x")], successes, strict=True
    ):
        for i in range(10):
            y.append(int(i < k))
            a.append(s)
            b.append(arm)
            g.append(i)
    return y, a, b, g


def test_interaction_glm_known_log_odds():
    # Rates .5/.2/.8/.5: odds 1, 1/4, 4, 1 multiply exactly, so the interaction is 0.
    res = stats.interaction_glm(*_cells([5, 2, 8, 5]), "raw", "base")
    assert abs(next(iter(res["coef"].values()))) < 1e-9 and res["p"] == pytest.approx(1.0)
    # Rates .5/.5/.5/.8: interaction = logit(.8) − 3·logit(.5) + ... = log 4.
    res = stats.interaction_glm(*_cells([5, 5, 5, 8]), "raw", "base")
    assert next(iter(res["coef"].values())) == pytest.approx(math.log(4))
    assert res["df"] == 1 and 0 < res["p"] < 1


def test_interaction_glm_refuses_separation():
    res = stats.interaction_glm(*_cells([10, 5, 5, 5]), "raw", "base")
    assert math.isnan(res["p"]) and "separation" in res["note"]


def test_sign_flip_exact():
    # All 2^C sign patterns: only all-plus and all-minus reach the observed statistic.
    assert stats.sign_flip_test(np.ones(4), 4) == pytest.approx(2 / 16)
    assert stats.sign_flip_test(np.ones(5), 5) == pytest.approx(2 / 32)
    assert stats.sign_flip_test(np.array([1.0, -1.0, 1.0, -1.0]), 4) == 1.0
    # Two contrasts flipped together per cluster.
    assert stats.sign_flip_test(np.ones((3, 2)), [3, 3]) == pytest.approx(2 / 8)


def test_sign_flip_exact_fisher_darwin():
    # Fisher (1935), The Design of Experiments §21: Darwin's 15 Zea mays pairs, cross- minus
    # self-fertilised heights in eighths of an inch; of the 2^15 sign patterns 863 give a
    # total >= the observed 314, so the two-sided p is 1726/32768 (Ernst 2004, Stat Sci 19:676).
    darwin = [49, -67, 8, 16, 6, 23, 28, 41, 14, 29, 56, 24, 75, 60, -48]
    assert sum(darwin) == 314
    assert stats.sign_flip_exact(darwin) == pytest.approx(1726 / 32768, abs=1e-15)
    assert stats.sign_flip_exact([-v for v in darwin]) == stats.sign_flip_exact(darwin)
    assert stats.sign_flip_exact([0, 0]) == 1.0 and stats.sign_flip_exact([]) == 1.0
    assert stats.sign_flip_exact([3, 0, 0]) == 1.0  # one informative unit: both signs equally extreme
    with pytest.raises(ValueError):
        stats.sign_flip_exact([0.5, 1.0])


def test_mcnemar_clustered_by_hand():
    # 4 seeds x 2 pairs. Seed 1: strategy won both; seed 2: won one, tied one; seed 3: tied
    # one, lost one; seed 4: won one, lost one. d = (2, 1, -1, 0).
    x = [1, 1, 1, 0, 1, 0, 0, 1]
    y = [0, 0, 0, 0, 1, 1, 1, 0]
    r = stats.mcnemar_clustered(x, y, [1, 1, 2, 2, 3, 3, 4, 4])
    # Durkalski et al. (2003), equal cluster sizes: (sum d)^2 / sum d^2 = 2^2 / (4 + 1 + 1) = 2/3
    # (Obuchowski 1998 in Yang et al.'s (2010) closed form is (K-1)/K of it: 1/2).
    assert r["stat"] == pytest.approx(2 / 3)
    # Signs of the three non-zero seeds (2, 1, 1 in size): sums +-4 (2 patterns), +-2 (4), 0 (2);
    # |sum| >= |2| in 6 of 8.
    assert r["p"] == pytest.approx(6 / 8)
    assert (r["b"], r["c"], r["pairs"], r["clusters"], r["clusters_discordant"]) == (4, 2, 8, 4, 3)
    # The plain test counts 8 independent pairs: b = 4, c = 2, p = 2 * 22/64.
    assert stats.mcnemar_exact(4, 2) == pytest.approx(44 / 64)


def test_mcnemar_clustered_one_pair_per_seed_is_exact_mcnemar():
    for b in range(13):
        for c in range(13):
            x = [1] * b + [0] * c + [1, 0]  # and two concordant pairs
            y = [0] * b + [1] * c + [1, 0]
            got = stats.mcnemar_clustered(x, y, range(len(x)))["p"]
            assert got == pytest.approx(stats.mcnemar_exact(b, c), abs=1e-12), (b, c)


def _copy_model(rng, seeds, reps, icc, p10, p01, studies):
    """Signed discordance (studies x seeds x reps): a seed draws one value, each rep keeps it
    with probability sqrt(icc), else redraws; marginals (p10, p01), within-seed correlation icc."""
    values, probs = np.array([1, -1, 0]), [p10, p01, 1 - p10 - p01]
    shared = values[rng.choice(3, p=probs, size=(studies, seeds, 1))]
    fresh = values[rng.choice(3, p=probs, size=(studies, seeds, reps))]
    return np.where(rng.random((studies, seeds, reps)) < math.sqrt(icc), shared, fresh)


@pytest.mark.parametrize(("seeds", "reps", "icc"), [(12, 4, 0.8), (20, 4, 0.5)])
def test_clustered_null_keeps_alpha_where_plain_mcnemar_does_not(seeds, reps, icc):
    """Reps of a seed share its luck and no strategy is better: counting every pair as
    independent rejects far more often than 5%; the sign flip over seeds does not.

    400 simulated studies, seeded. 4000 studies of the same designs gave plain 0.248 / 0.183
    and sign flip 0.008 / 0.037; the bounds below sit 3.3 SE (a binomial 99.9% limit at 400
    studies) on the safe side of those rates, so they test the true rates, not this draw:
    plain > 0.10 (0.183 - 3.3 x 0.019 = 0.12), sign flip <= 0.05 + 3.3 x 0.011 = 0.086."""
    rng = np.random.default_rng(2003)
    z = _copy_model(rng, seeds, reps, icc, 0.15, 0.15, 400)
    seed_of = np.repeat(np.arange(seeds), reps)
    plain = clustered = 0
    for study in z:
        x, y = (study.ravel() > 0).astype(int), (study.ravel() < 0).astype(int)
        plain += stats.mcnemar_exact(x.sum(), y.sum()) <= 0.05
        clustered += stats.mcnemar_clustered(x, y, seed_of)["p"] <= 0.05
    assert plain / 400 > 0.10 and clustered / 400 <= 0.05 + 3.3 * math.sqrt(0.05 * 0.95 / 400), (
        plain,
        clustered,
    )
