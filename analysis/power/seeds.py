"""Power and MDE of the report's success test when a task seed has several reps.

With one rep per seed the report's test is the exact McNemar test and ``analysis.power``
computes its power exactly. With several reps it is the seed sign-flip test
(``stats.mcnemar_clustered``), and the shortcut of exact McNemar at the effective pairs
n_eff = n / (1 + (m - 1)·ICC) over-promises with few seeds: the sign flip uses seeds, not
pairs, as its units, and with S seeds its smallest p is 2 / 2^S (docs/power.md has the
simulation: up to 0.6 too optimistic at 6-10 seeds, within about 0.05 from 20-40 seeds).
So the power is simulated here, under the model the ICC describes and nothing more:

Copy model. A seed draws one signed discordance z in {+1, -1, 0} with probabilities
(p10, p01, 1 - p10 - p01); each of its m pairs keeps that value with probability
sqrt(ICC), else draws afresh. Every pair has the marginals (p10, p01) and any two pairs
of a seed correlate with the ICC. Simulations are seeded, so a report is reproducible,
and share their uniforms across effect sizes (common random numbers), so the MDE
search sees a smooth, monotone power curve.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.power import sizing

SIMS = 2000  # Monte Carlo SE of a power <= 0.011
# From this many seeds on, exact McNemar at n_eff is used instead of simulating: it was
# within -0.04..+0.10 of the sign flip's simulated power at 40 seeds (the sign flip does
# a little better), and the simulation's cost grows with seeds^2 x reps.
LARGE = 60


def min_seeds(alpha: float) -> int:
    """Fewest task seeds with which the sign-flip test can reach alpha at all: its
    smallest two-sided p is 2 / 2^S, when every seed leans the same way."""
    return math.ceil(1 - math.log2(alpha) - 1e-12)


def _uniforms(seeds: int, reps: int, icc: float, sims: int, seed: int):
    rng = np.random.default_rng(seed)
    shared = rng.random((sims, seeds, 1))
    fresh = rng.random((sims, seeds, reps))
    keep = rng.random((sims, seeds, reps)) < math.sqrt(icc)
    return np.where(keep, shared, fresh)


def _seed_sums(u: np.ndarray, p10: float, p01: float) -> np.ndarray:
    """Per simulated study and seed, d_k = b_k - c_k. Larger p10 (at fixed u) never lowers z."""
    z = np.where(u < p10, 1, np.where(u < p10 + p01, -1, 0))
    return z.sum(axis=2)


def sign_flip_p(d: np.ndarray) -> np.ndarray:
    """``stats.sign_flip_exact`` for every row of integer seed sums d (rows x seeds) at once."""
    d = np.asarray(d, np.int64)
    mags, observed = np.abs(d), d.sum(axis=1)
    top = max(int(mags.sum(axis=1).max()), 1)
    dist = np.zeros((mags.shape[0], 2 * top + 1))
    dist[:, top] = 1.0  # column = signed sum + top
    for j in range(mags.shape[1]):
        for k in np.unique(mags[:, j]):
            if k == 0:
                continue
            rows = mags[:, j] == k
            old = dist[rows]
            new = np.zeros_like(old)
            new[:, k:] += 0.5 * old[:, :-k]
            new[:, :-k] += 0.5 * old[:, k:]
            dist[rows] = new
    extreme = np.abs(np.arange(-top, top + 1))[None, :] >= np.abs(observed)[:, None]
    return np.minimum(1.0, (dist * extreme).sum(axis=1))


def power(
    seeds: int, reps: int, icc: float, p10: float, p01: float, alpha: float, sims: int = SIMS, seed: int = 0
) -> float:
    """Probability that the sign-flip test over ``seeds`` seeds x ``reps`` pairs rejects at alpha."""
    if seeds < min_seeds(alpha):
        return 0.0
    if seeds >= LARGE:
        return sizing.mcnemar_power(math.floor(sizing.effective_pairs(seeds, reps, icc)), p10, p01, alpha)
    d = _seed_sums(_uniforms(seeds, reps, icc, sims, seed), p10, p01)
    return float((sign_flip_p(d) <= alpha).mean())


def mde(
    seeds: int,
    reps: int,
    icc: float,
    psi: float,
    alpha: float,
    target: float = 0.8,
    sims: int = SIMS // 2,
    seed: int = 0,
) -> float:
    """Smallest |delta| the sign-flip test detects with ``target`` power at discordance psi
    (raised to |delta| when smaller, as ``power.split``); inf when even delta = 1 is not enough."""
    if seeds < min_seeds(alpha):
        return math.inf
    if seeds >= LARGE:
        return sizing.mcnemar_mde(sizing.effective_pairs(seeds, reps, icc), psi, alpha, target)
    u = _uniforms(seeds, reps, icc, sims, seed)

    def hits(delta: float) -> float:
        p = max(psi, delta)
        return float((sign_flip_p(_seed_sums(u, (p + delta) / 2, (p - delta) / 2)) <= alpha).mean())

    if hits(1.0) < target:
        return math.inf
    lo, hi = 0.0, 1.0
    for _ in range(10):  # to 1e-3, finer than the report prints
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if hits(mid) >= target else (mid, hi)
    return hi


def seeds_for(reps: int, icc: float, p10: float, p01: float, alpha: float, target: float = 0.8) -> int:
    """Fewest seeds x ``reps`` whose sign-flip test reaches ``target`` power: bisection over
    seeds, starting from the exact McNemar size at n_eff (which is too optimistic with
    few seeds, so the answer is never below it by much)."""
    n = sizing.mcnemar_n(p10, p01, alpha, target)
    lo = max(min_seeds(alpha), math.ceil(n * sizing.design_effect(reps, icc) / reps - 1e-9)) - 1
    hi = lo + 1
    while power(hi, reps, icc, p10, p01, alpha) < target:
        if hi > sizing.MAX_PAIRS // reps:
            raise ValueError(f"p10={p10}, p01={p01}: {target:.0%} power needs more than {hi:,} seeds")
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # invariant: power(hi) >= target
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power(mid, reps, icc, p10, p01, alpha) >= target else (mid, hi)
    return hi
