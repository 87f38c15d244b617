"""The library versions of Wilson, exact McNemar, Holm, Brown–Forsythe and the plain paired
bootstrap (analysis/stats/inference.py: statsmodels, scipy) give what ctxbench's own code gave,
on many inputs. The hand-written versions are kept here only, as the reference."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats as st

from analysis.stats import inference

NAN = float("nan")


# -- the reference: analysis/stats/tests.py before the switch ----------------------------------
def wilson_ref(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    if n <= 0:
        return NAN, NAN
    z = st.norm.ppf(1 - alpha / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if k == 0 else float(centre - half)), (1.0 if k == n else float(centre + half))


def mcnemar_ref(b: int, c: int) -> float:
    n = int(b) + int(c)
    return 1.0 if n == 0 else float(min(1.0, 2 * st.binom.cdf(min(b, c), n, 0.5)))


def holm_ref(pvalues) -> np.ndarray:
    p = np.asarray(pvalues, float)
    out = np.full_like(p, NAN)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    order = np.argsort(p[ok], kind="stable")
    adj = np.minimum(np.maximum.accumulate((m - np.arange(m)) * p[ok][order]), 1.0)
    res = np.empty(m)
    res[order] = adj
    out[ok] = res
    return out


def brown_forsythe_ref(*groups) -> tuple[float, float]:
    arrays = [a[~np.isnan(a)] for a in (np.asarray(g, float) for g in groups)]
    if len(arrays) < 2 or any(a.size < 2 for a in arrays):
        return NAN, NAN
    dev = [np.abs(a - np.median(a)) for a in arrays]
    if not any(np.any(d) for d in dev):
        return 0.0, 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = st.f_oneway(*dev)
    return float(res.statistic), float(res.pvalue)


def bootstrap_ref(x, y, n_boot: int = 10_000, alpha: float = 0.05, seed: int = 0) -> tuple[float, float]:
    d = np.asarray(x, float) - np.asarray(y, float)
    d = d[~np.isnan(d)]
    if d.size == 0:
        return NAN, NAN
    idx = np.random.default_rng(seed).integers(0, d.size, size=(n_boot, d.size))
    lo, hi = np.quantile(d[idx].sum(axis=1) / d.size, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def same(a, b, rel: float = 1e-9) -> bool:
    a, b = np.atleast_1d(np.asarray(a, float)), np.atleast_1d(np.asarray(b, float))
    return a.shape == b.shape and bool(
        np.all((np.isnan(a) & np.isnan(b)) | np.isclose(a, b, rtol=rel, atol=1e-12))
    )


RNG_SEEDS = range(40)


# -- the comparisons ----------------------------------------------------------------------------
def test_wilson_matches_on_every_count_up_to_60_and_three_levels():
    compared = 0
    for n in range(0, 61):
        for k in range(0, n + 1):
            for alpha in (0.05, 0.1, 0.01):
                assert same(inference.wilson(k, n, alpha), wilson_ref(k, n, alpha)), (k, n, alpha)
                compared += 1
    assert compared > 5000
    assert inference.wilson(0, 10)[0] == 0.0 and inference.wilson(10, 10)[1] == 1.0  # exact at the ends


def test_exact_mcnemar_matches_on_every_pair_of_discordant_counts_up_to_80():
    for b in range(81):
        for c in range(81):
            assert same(inference.mcnemar_exact(b, c), mcnemar_ref(b, c), rel=1e-12), (b, c)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_holm_matches_with_ties_nans_and_ones(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(0, 30))
    p = rng.choice([*rng.uniform(0, 1, 8), 0.0, 0.01, 0.01, 0.5, 1.0, NAN], size=m)
    assert same(inference.holm(p), holm_ref(p), rel=1e-12)
    assert same(inference.holm([NAN, NAN]), holm_ref([NAN, NAN]))


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_brown_forsythe_matches_on_groups_of_any_shape(seed):
    rng = np.random.default_rng(seed)
    groups = []
    for _ in range(int(rng.integers(1, 5))):
        size = int(rng.integers(1, 25))
        g = (
            rng.integers(0, 3, size).astype(float)
            if seed % 3 == 0
            else rng.normal(0, rng.uniform(0.1, 4), size)
        )
        if seed % 4 == 1:
            g[rng.random(size) < 0.2] = NAN
        groups.append(g)
    assert same(inference.brown_forsythe(*groups), brown_forsythe_ref(*groups))
    flat = [np.full(5, 2.0), np.full(4, 7.0)]  # no spread anywhere
    assert inference.brown_forsythe(*flat) == brown_forsythe_ref(*flat) == (0.0, 1.0)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_plain_paired_bootstrap_matches_draw_for_draw(seed):
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 50))
    binary = seed % 2 == 0
    x = rng.integers(0, 2, n).astype(float) if binary else rng.normal(size=n)
    y = rng.integers(0, 2, n).astype(float) if binary else rng.normal(size=n)
    if seed % 5 == 3:
        x[rng.random(n) < 0.2] = NAN
    for alpha in (0.05, 0.2):
        new = inference.paired_bootstrap_ci(x, y, n_boot=2000, alpha=alpha, seed=seed)
        assert same(new, bootstrap_ref(x, y, n_boot=2000, alpha=alpha, seed=seed), rel=1e-12), (n, alpha)


def test_plain_paired_bootstrap_of_identical_differences_and_of_nothing():
    assert (
        inference.paired_bootstrap_ci([1, 1, 1], [0, 0, 0])
        == bootstrap_ref([1, 1, 1], [0, 0, 0])
        == (1.0, 1.0)
    )
    assert same(inference.paired_bootstrap_ci([NAN], [1.0]), bootstrap_ref([NAN], [1.0]))
