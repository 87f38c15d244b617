"""Power, sample size and minimal detectable effect for the report's paired comparisons.

``python -m analysis.power`` is the command line (``analysis/power/__main__.py``); this
module is the arithmetic, kept apart so the report can use it without argparse.

Binary outcome (success), as the report tests it: a strategy against the reference
on the same pairs, exact conditional McNemar, two-sided, Holm over the K comparisons
of the family. A pair is discordant "10" (strategy succeeded, reference failed) with
probability p10 and "01" with p01; psi = p10 + p01, delta = p10 - p01 is the
difference in success rates. Sizing uses alpha/K, the threshold of Holm's first
(most stringent) step: Holm rejects everything Bonferroni does, so power at alpha/K
is a lower bound on the power to reject that hypothesis within the family.

Exact power sums over the number of discordant pairs D ~ Bin(n, psi); given D = d
the test rejects when min(B, d - B) <= k(d), the largest k with
2 * P(Bin(d, 1/2) <= k) <= alpha, and B ~ Bin(d, p10 / psi). Two normal
approximations sit beside it: Connor (1987), which uses the unconditional variance
of a pair's difference, psi - delta^2, and the conditional one, which fixes D at its
mean n * psi and so forgets that D is random (it is the more optimistic of the two).

Clustering: reps of one task seed share the task (its repo, traps and drift), so
their discordances are correlated. With m pairs per seed and intra-class correlation
rho of a pair's signed discordance (+1, -1, 0), the variance of the mean difference
is inflated by the design effect DE = 1 + (m - 1) * rho (Kish), and a plan of
S seeds x m reps is worth n_eff = S * m / DE independent pairs. rho = 0: reps are as
good as new seeds; rho = 1: extra reps add nothing. The inference is about the
population of task seeds. With several reps per seed the report tests over seeds (a
sign flip), whose power this shortcut over-states when seeds are few:
``analysis.power.seeds`` simulates that test instead.

Continuous measures (tokens, cost, latency) are compared with the Wilcoxon
signed-rank test. Its sample size is the paired t test's divided by the asymptotic
relative efficiency (Lehmann 1975; G*Power's "A.R.E." method): by default 0.864, the
Hodges-Lehmann lower bound over all continuous symmetric shift models, so the plan
holds whatever the shape of the differences; 3/pi = 0.955 if they are normal.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as st

ARE_MIN = 0.864  # Hodges & Lehmann (1956): inf over symmetric shift models of ARE(signed-rank : t)
ARE_NORMAL = 3 / math.pi
MAX_PAIRS = 1_000_000


def holm_alpha(alpha: float, k: int) -> float:
    """Per-comparison level at Holm's first step over k comparisons."""
    return alpha / max(int(k), 1)


def _check(p10: float, p01: float, alpha: float) -> None:
    if not (0 <= p10 <= 1 and 0 <= p01 <= 1 and p10 + p01 <= 1):
        raise ValueError(f"discordance p10={p10}, p01={p01}: each in [0, 1] and p10 + p01 <= 1")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha}: must be in (0, 1)")


def rejection_bound(d: ArrayLike, alpha: float, sides: int = 2) -> np.ndarray:
    """k(d): the exact McNemar test with d discordant pairs rejects when min(b, c) <= k.

    Same rule as ``stats.mcnemar_exact`` (p = min(1, 2 * P(Bin(d, 1/2) <= min(b, c))));
    -1 where no split of d pairs can reach alpha.
    """
    d = np.asarray(d, dtype=float)
    tail = alpha / 2 if sides == 2 else alpha
    k = np.nan_to_num(st.binom.ppf(tail, d, 0.5), nan=0.0)
    # ppf is the smallest k with cdf >= tail; rejecting needs cdf <= tail (ties count).
    return np.where(st.binom.cdf(k, d, 0.5) <= tail * (1 + 1e-12), k, k - 1)


@lru_cache(maxsize=64)
def _bounds(size: int, alpha: float, sides: int) -> np.ndarray:
    # k(d) does not depend on n: searches over n reuse one table per power of two.
    table = rejection_bound(np.arange(size), alpha, sides)
    table.setflags(write=False)  # shared by every caller through the cache
    return table


def mcnemar_power(n: int, p10: float, p01: float, alpha: float = 0.05, sides: int = 2) -> float:
    """Exact (unconditional) power of the exact conditional McNemar test with n pairs.

    ``sides=1`` tests in the direction of the effect only (for checking against
    one-sided published values); the report's test is two-sided.
    """
    _check(p10, p01, alpha)
    if sides not in (1, 2):
        raise ValueError(f"sides={sides}: 1 or 2")
    n, psi = int(n), p10 + p01
    if n <= 0 or psi == 0:
        return 0.0
    # Only discordant counts with non-negligible probability (the rest weigh < 1e-13).
    d = np.arange(int(st.binom.ppf(1e-14, n, psi)), int(st.binom.isf(1e-14, n, psi)) + 1)
    k = _bounds(1 << int(d[-1]).bit_length(), alpha, sides)[d]
    q = p10 / psi
    low, high = st.binom.cdf(k, d, q), st.binom.sf(d - k - 1, d, q)
    cond = low + high if sides == 2 else (high if q >= 0.5 else low)
    return float(np.clip(np.dot(st.binom.pmf(d, n, psi), cond), 0.0, 1.0))


def mcnemar_power_approx(
    n: float, p10: float, p01: float, alpha: float = 0.05, method: str = "connor"
) -> float:
    """Normal-approximation power, two-sided: ``connor`` (Connor 1987) or ``conditional``."""
    _check(p10, p01, alpha)
    psi, delta = p10 + p01, abs(p10 - p01)
    if n <= 0 or delta == 0:
        return alpha if delta == 0 and psi > 0 else 0.0
    var = psi - delta**2 if method == "connor" else psi - delta**2 / psi
    z = st.norm.isf(alpha / 2)
    shift = delta * math.sqrt(n)
    if var <= 0:
        return 1.0 if shift > z * math.sqrt(psi) else 0.0
    sd = math.sqrt(var)
    return float(
        st.norm.cdf((shift - z * math.sqrt(psi)) / sd) + st.norm.cdf((-shift - z * math.sqrt(psi)) / sd)
    )


def mcnemar_n_approx(
    p10: float, p01: float, alpha: float = 0.05, power: float = 0.8, method: str = "connor"
) -> float:
    """Pairs needed by the normal approximation (unrounded), the inverse of ``mcnemar_power_approx``
    up to its negligible second tail."""
    _check(p10, p01, alpha)
    psi, delta = p10 + p01, abs(p10 - p01)
    if delta == 0:
        return math.inf
    var = psi - delta**2 if method == "connor" else psi - delta**2 / psi
    za, zb = st.norm.isf(alpha / 2), st.norm.ppf(power)
    return (za * math.sqrt(psi) + zb * math.sqrt(max(var, 0.0))) ** 2 / delta**2


def mcnemar_n(p10: float, p01: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Smallest number of pairs whose exact power reaches ``power``.

    Exact power is a slightly saw-toothed function of n: the search brackets the
    answer by bisection from Connor's estimate, then walks back over the preceding 20
    sizes so an earlier crossing is not missed (over the grid in docs/power.md power
    never fell back under the target after the first crossing).
    """
    if p10 == p01:
        raise ValueError(f"p10 = p01 = {p10}: no difference to detect")
    hi = max(2, math.ceil(mcnemar_n_approx(p10, p01, alpha, power)))
    while mcnemar_power(hi, p10, p01, alpha) < power:
        if hi >= MAX_PAIRS:
            raise ValueError(f"p10={p10}, p01={p01}: {power:.0%} power needs more than {MAX_PAIRS:,} pairs")
        hi = min(2 * hi, MAX_PAIRS)
    lo = 0
    while hi - lo > 1:  # invariant: power(hi) >= target
        mid = (lo + hi) // 2
        if mcnemar_power(mid, p10, p01, alpha) >= power:
            hi = mid
        else:
            lo = mid
    for n in range(max(1, hi - 20), hi):
        if mcnemar_power(n, p10, p01, alpha) >= power:
            return n
    return hi


def split(psi: float, delta: float) -> tuple[float, float]:
    """(p10, p01) for total discordance psi and difference delta; psi is raised to |delta|
    when smaller, since a difference of delta needs at least |delta| discordant pairs."""
    psi = max(psi, abs(delta))
    return (psi + delta) / 2, (psi - delta) / 2


def mcnemar_mde(n: float, psi: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest |delta| detectable with ``power`` from n pairs at discordance psi.

    For |delta| > psi the discordance is raised to |delta| (``split``), so the answer
    is defined even when the pilot saw no discordant pair; ``inf`` when even
    delta = 1 (every pair discordant one way) is not enough.
    """
    n = int(math.floor(n))
    if mcnemar_power(n, *split(psi, 1.0), alpha) < power:
        return math.inf
    lo, hi = 0.0, 1.0
    for _ in range(24):  # to 6e-8
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if mcnemar_power(n, *split(psi, mid), alpha) >= power else (mid, hi)
    return hi


def design_effect(pairs_per_seed: float, icc: float) -> float:
    """Kish design effect 1 + (m - 1) * rho for m correlated pairs per task seed."""
    if not 0 <= icc <= 1:
        raise ValueError(f"icc={icc}: must be in [0, 1]")
    return 1 + (max(pairs_per_seed, 1) - 1) * icc


def effective_pairs(seeds: int, reps: int, icc: float) -> float:
    return seeds * reps / design_effect(reps, icc)


def icc_oneway(values: ArrayLike, clusters: ArrayLike) -> float:
    """ANOVA estimator of the intra-class correlation for unequal cluster sizes
    (Donner 1986), clipped to [0, 1]; NaN when not estimable (fewer than two
    clusters, no cluster with two members, or no variation at all)."""
    y = np.asarray(values, float)
    _, codes = np.unique(np.asarray(clusters).astype(str), return_inverse=True)
    sizes = np.bincount(codes).astype(float)
    k, total = sizes.size, y.size
    if k < 2 or total <= k:
        return math.nan
    means = np.bincount(codes, weights=y) / sizes
    msb = float((sizes * (means - y.mean()) ** 2).sum() / (k - 1))
    msw = float(((y - means[codes]) ** 2).sum() / (total - k))
    m0 = (total - (sizes**2).sum() / total) / (k - 1)
    denom = msb + (m0 - 1) * msw
    return math.nan if denom <= 0 else float(min(max((msb - msw) / denom, 0.0), 1.0))


def _ttest_power():
    from statsmodels.stats.power import TTestPower  # statsmodels imports slowly; only when needed

    return TTestPower()


def signed_rank_floor(alpha: float) -> int:
    """Fewest pairs with which the exact two-sided signed-rank test can reject at all: its
    smallest p-value, all differences one sign, is 2 / 2**n. The t test's shortcut below
    ignores this, and a pilot whose latency shifts by many SDs would otherwise be told 3."""
    return max(2, math.ceil(1 + math.log2(1 / alpha) - 1e-9))


def paired_power(n: float, diff: float, sd: float, alpha: float = 0.05, are: float = ARE_MIN) -> float:
    """Power of the two-sided Wilcoxon signed-rank test on n pairs: the paired t test's
    power at n * ARE pairs (noncentral t); none below the floor where no p-value is small enough."""
    nobs = n * are
    if nobs < 2 or sd <= 0:
        return math.nan
    if n < signed_rank_floor(alpha):
        return 0.0
    return float(_ttest_power().power(effect_size=abs(diff) / sd, nobs=nobs, alpha=alpha))


def paired_n(diff: float, sd: float, alpha: float = 0.05, power: float = 0.8, are: float = ARE_MIN) -> int:
    """Pairs the signed-rank test needs to detect a mean shift ``diff`` given the SD of differences."""
    if diff == 0 or sd <= 0:
        raise ValueError(f"diff={diff}, sd={sd}: need a non-zero difference and a positive SD")
    es, floor = abs(diff) / sd, signed_rank_floor(alpha)
    with warnings.catch_warnings():  # its ConvergenceWarning is handled just below
        warnings.simplefilter("ignore")
        n_t = float(
            np.asarray(_ttest_power().solve_power(effect_size=es, alpha=alpha, power=power, nobs=None)).item()
        )
    if not math.isfinite(n_t):
        n_t = _t_pairs_by_bisection(es, alpha, power, lo=floor * are)
    return max(floor, math.ceil(n_t / are - 1e-9))


def _t_pairs_by_bisection(es: float, alpha: float, power: float, lo: float) -> float:
    """statsmodels' root finder returns nan when the answer sits at its edge: a shift so large
    that the t test needs a pair or two, or so small that it needs millions. Power grows with
    n, so bisection between the signed-rank floor and 1e9 answers where it does not."""
    tt = _ttest_power()

    def power_at(n: float) -> float:
        return float(tt.power(effect_size=es, nobs=n, alpha=alpha))

    hi = 1e9
    if power_at(lo) >= power:
        return lo
    if not power_at(hi) >= power:
        raise ValueError(f"effect size {es:.3g}: not detectable with {hi:.0e} pairs")
    while hi - lo > 1e-6 * lo:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if power_at(mid) < power else (lo, mid)
    return hi


def paired_mde(n: float, sd: float, alpha: float = 0.05, power: float = 0.8, are: float = ARE_MIN) -> float:
    """Smallest mean shift the signed-rank test detects with ``power`` from n pairs (units of sd)."""
    nobs = n * are
    if nobs < 2 or not sd > 0 or n < signed_rank_floor(alpha):
        return math.nan
    es = _ttest_power().solve_power(effect_size=None, nobs=nobs, alpha=alpha, power=power)
    return float(np.asarray(es).item()) * sd
