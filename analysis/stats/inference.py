"""The statistics of docs/design.md §11: the textbook ones from scipy and statsmodels, the
clustered ones (which no library has) written here, each small enough to check by hand.

Conventions: two-sided tests; ``alpha`` is the family-wise level; functions return
NaN rather than raise when a cell has too little data, because a report over a
partially finished study must still render.
"""

from __future__ import annotations

import warnings
from itertools import product

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as st
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

NAN = float("nan")


def wilson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (Newcombe 1998, method 3)."""
    if n <= 0:
        return NAN, NAN
    lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
    # The bounds are exactly 0 at k = 0 and 1 at k = n; float noise must not say otherwise.
    return (0.0 if k == 0 else float(lo)), (1.0 if k == n else float(hi))


def mcnemar_exact(b: int, c: int) -> float:
    """Exact (conditional binomial) two-sided McNemar p for discordant counts b, c."""
    return float(mcnemar([[0, int(b)], [int(c), 0]], exact=True).pvalue)


def sign_flip_exact(scores: ArrayLike) -> float:
    """Exact two-sided p of Fisher's randomisation (sign-flip) test on integer scores u_k:
    P(|sum s_k u_k| >= |sum u_k|) over the 2^K equally likely signs s_k = +-1.

    Exact for any K: the distribution of the signed sum is built by convolution over its
    integer support (K x sum|u_k| steps) instead of enumerating 2^K patterns.
    """
    u = np.asarray(scores, float)
    if u.size and not np.array_equal(u, np.round(u)):
        raise ValueError("sign_flip_exact needs integer scores (counts, or values in a common unit)")
    observed = abs(int(u.sum()))
    mags = np.abs(u[u != 0]).astype(np.int64)
    if mags.size == 0:
        return 1.0
    top = int(mags.sum())
    dist = np.zeros(2 * top + 1)
    dist[top] = 1.0  # index = signed sum + top
    for k in mags:
        nxt = np.zeros_like(dist)
        nxt[k:] += 0.5 * dist[:-k]
        nxt[:-k] += 0.5 * dist[k:]
        dist = nxt
    extreme = np.abs(np.arange(-top, top + 1)) >= observed
    return float(min(1.0, dist[extreme].sum()))


def mcnemar_clustered(x: ArrayLike, y: ArrayLike, clusters: ArrayLike) -> dict:
    """Paired 0/1 outcomes x (strategy) and y (reference), each pair in a cluster (its task
    seed): McNemar's test for pairs that share their cluster's luck.

    Per cluster k, d_k = b_k - c_k (pairs the strategy won minus pairs it lost). The
    statistic X2 = (sum d_k)^2 / sum d_k^2 is Durkalski et al.'s (2003) when every cluster
    has the same number of pairs (Yang, Sun & Hardin 2010's modified Obuchowski test
    otherwise). Its p is not read from chi2(1), which needs many clusters, but from the
    exact sign-flip distribution over clusters (``sign_flip_exact``): under the null, a
    cluster's strategy and reference are exchangeable, so each d_k is as likely to have
    either sign. With one pair per cluster this is exactly ``mcnemar_exact``. Returns
    stat, p, b, c, pairs, clusters, and clusters with d_k != 0.
    """
    z = np.asarray(x, float) - np.asarray(y, float)
    codes, _ = _codes(np.asarray(clusters, dtype=object))
    d = np.rint(np.bincount(codes, weights=z, minlength=int(codes.max()) + 1 if codes.size else 0))
    den = float((d**2).sum())
    return {
        "stat": float(d.sum()) ** 2 / den if den else 0.0,
        "p": sign_flip_exact(d),
        "b": int((z > 0).sum()),
        "c": int((z < 0).sum()),
        "pairs": int(z.size),
        "clusters": int(d.size),
        "clusters_discordant": int((d != 0).sum()),
    }


def paired_bootstrap_ci(
    x: ArrayLike,
    y: ArrayLike,
    *,
    clusters: ArrayLike | None = None,
    n_boot: int = 10_000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI for mean(x - y) over pairs (scipy's bootstrap).

    With ``clusters`` (e.g. the task seed of each pair) whole clusters are resampled:
    reps of the same task share their luck under common random numbers, so treating
    them as independent pairs would make the interval too narrow. Seeded, so a report
    regenerated from the same runs prints the same interval.
    """
    d = np.asarray(x, float) - np.asarray(y, float)
    keep = ~np.isnan(d)
    d = d[keep]
    if d.size == 0:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    if clusters is None:
        if np.all(d == d[0]):  # scipy calls one value's distribution degenerate; every resample is it
            return float(d[0]), float(d[0])
        res = st.bootstrap(
            (d,),
            np.mean,
            n_resamples=n_boot,
            confidence_level=1 - alpha,
            method="percentile",
            rng=rng,
            vectorized=True,
        )
        return float(res.confidence_interval.low), float(res.confidence_interval.high)
    codes, _ = _codes(np.asarray(clusters, dtype=object)[keep])
    sums = np.bincount(codes, weights=d)
    counts = np.bincount(codes).astype(float)
    idx = rng.integers(0, sums.size, size=(n_boot, sums.size))
    boot = sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, codes = np.unique(values.astype(str), return_inverse=True)
    return codes, uniq


def wilcoxon_paired(x: ArrayLike, y: ArrayLike) -> tuple[float, float]:
    """Wilcoxon signed-rank test on x - y: (statistic, two-sided p).

    Zero differences are dropped (Wilcoxon's convention); all-zero differences mean
    no evidence of a difference, p = 1.
    """
    d = np.asarray(x, float) - np.asarray(y, float)
    d = d[~np.isnan(d)]
    if d.size == 0:
        return NAN, NAN
    if not np.any(d != 0):
        return 0.0, 1.0
    res = st.wilcoxon(d, zero_method="wilcox")
    return float(res.statistic), float(res.pvalue)


def brown_forsythe(*groups: ArrayLike) -> tuple[float, float]:
    """Brown–Forsythe test of equal variances: one-way ANOVA on |x - group median|."""
    arrays = [a[~np.isnan(a)] for a in (np.asarray(g, float) for g in groups)]
    if len(arrays) < 2 or any(a.size < 2 for a in arrays):
        return NAN, NAN
    if not any(np.any(a != np.median(a)) for a in arrays):
        return 0.0, 1.0  # no spread anywhere: ANOVA would divide 0 by 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = st.levene(*arrays, center="median")  # Levene's test about the median is Brown–Forsythe's
    return float(res.statistic), float(res.pvalue)


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm step-down adjusted p-values (NaNs pass through and do not count)."""
    p = np.asarray(pvalues, float)
    out = np.full_like(p, NAN)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method="holm")[1]
    return out


def interaction_glm(
    y: ArrayLike, a: ArrayLike, b: ArrayLike, groups: ArrayLike, a_ref: str, b_ref: str
) -> dict:
    """Joint Wald test of the a × b interaction in a logistic model, errors clustered by group.

    Returns stat, df, p, and ``note`` when the model cannot answer: a cell at 0% or
    100% (separation, no finite MLE) or too few clusters for the number of
    interaction terms (the cluster-robust covariance is then rank deficient).
    """
    import pandas as pd
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    df = pd.DataFrame(
        {
            "y": np.asarray(y, float),
            "a": np.asarray(a, str),
            "b": np.asarray(b, str),
            "g": _codes(np.asarray(groups, dtype=object))[0],
        }
    )
    out: dict = {"stat": NAN, "df": 0, "p": NAN, "n": len(df), "clusters": int(df["g"].nunique()), "note": ""}
    rates = df.groupby(["a", "b"])["y"].mean()
    k = (df["a"].nunique() - 1) * (df["b"].nunique() - 1)
    out["df"] = k
    if k == 0:
        out["note"] = "needs two levels of each factor"
    elif ((rates == 0) | (rates == 1)).any():
        out["note"] = "a cell at 0% or 100% success (separation): logistic MLE does not exist"
    elif out["clusters"] <= k:
        out["note"] = f"{out['clusters']} clusters for {k} interaction terms: cluster-robust test undefined"
    if out["note"]:
        return out
    formula = f"y ~ C(a, Treatment({a_ref!r})) * C(b, Treatment({b_ref!r}))"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = smf.glm(formula, df, family=sm.families.Binomial()).fit(
            cov_type="cluster", cov_kwds={"groups": df["g"].to_numpy()}
        )
    names = list(fit.params.index)
    inter = [i for i, name in enumerate(names) if ":" in name]
    R = np.zeros((len(inter), len(names)))
    R[np.arange(len(inter)), inter] = 1
    wald = fit.wald_test(R, scalar=True)
    out.update(
        stat=float(wald.statistic),
        p=float(wald.pvalue),
        coef={names[i]: float(fit.params.iloc[i]) for i in inter},
    )
    return out


def sign_flip_test(
    cluster_sums: ArrayLike, n_total: ArrayLike, *, exact_max: int = 14, n_perm: int = 20_000, seed: int = 0
) -> float:
    """Permutation p for H0: every contrast has mean zero, by flipping cluster signs.

    ``cluster_sums`` is (clusters × contrasts): the per-cluster sum of a paired contrast
    (e.g. a difference-in-differences); ``n_total`` the number of pairs behind each
    contrast (scalar or one per contrast). Statistic: sum of squared contrast means.
    Flipping a whole cluster's vector keeps the contrasts' correlation. All 2^C sign
    patterns are enumerated when C <= exact_max, so the p is exact.
    """
    s = np.asarray(cluster_sums, float)
    s = s.reshape(-1, 1) if s.ndim == 1 else s
    n_total = np.broadcast_to(np.asarray(n_total, float), (s.shape[1],))
    c = s.shape[0]
    if c == 0 or not np.all(n_total > 0):
        return NAN
    observed = float(((s.sum(0) / n_total) ** 2).sum())
    if c <= exact_max:
        signs = np.array(list(product((1.0, -1.0), repeat=c)))
        total = signs.shape[0]
    else:
        rng = np.random.default_rng(seed)
        signs = rng.choice((1.0, -1.0), size=(n_perm, c))
        total = n_perm
    perm = (((signs @ s) / n_total) ** 2).sum(axis=1)
    hits = int((perm >= observed * (1 - 1e-9)).sum())
    return hits / total if c <= exact_max else (hits + 1) / (total + 1)
