"""What one comparison's pairs say about power: the report's "power the study as run
had" (of the test the report runs: ``analysis.power`` with one pair per seed,
``analysis.power.seeds`` with several), and the rates a finished study hands to
``python -m analysis.power --pilot``.

A comparison is a strategy against the reference on matched pairs (same study, model,
task seed and rep, same arm); the cluster is the task seed, whose reps share the task.
The arithmetic is in ``analysis.power``; this module only estimates its inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from analysis.power import seeds as seedpower
from analysis.power import sizing

EFFECT = 0.10  # the report's reference effect: a 10-point difference in success rate
TARGET = 0.80  # the power at which a minimal detectable effect is quoted


@dataclass(frozen=True)
class Pairs:
    """n pairs over ``seeds`` task seeds; ``per_seed`` is Kish's sum(m_i^2) / n, the
    cluster size that enters the design effect (the reps per seed when balanced)."""

    n: int
    seeds: int
    per_seed: float
    icc: float
    icc_note: str

    @property
    def design_effect(self) -> float:
        return sizing.design_effect(self.per_seed, self.icc) if self.n else math.nan

    @property
    def n_eff(self) -> float:
        return self.n / self.design_effect if self.n else 0.0


def _pairs(values: np.ndarray, clusters: ArrayLike) -> Pairs:
    _, codes = np.unique(np.asarray(clusters).astype(str), return_inverse=True)
    sizes = np.bincount(codes) if values.size else np.zeros(0, int)
    n = int(values.size)
    per_seed = float((sizes.astype(float) ** 2).sum() / n) if n else 1.0
    if per_seed <= 1:
        return Pairs(n, int(sizes.size), 1.0, 0.0, "one pair per seed")
    icc = sizing.icc_oneway(values, clusters)
    if math.isnan(icc):
        # Too few seeds (or no variation) to estimate: count seeds, not pairs -- the
        # conservative end, since the inference is about the population of seeds.
        return Pairs(n, int(sizes.size), per_seed, 1.0, "assumed 1 (not estimable)")
    return Pairs(n, int(sizes.size), per_seed, icc, "estimated")


@dataclass(frozen=True)
class Binary:
    """Discordance of a paired success comparison: b = strategy won, c = reference won."""

    pairs: Pairs
    b: int
    c: int

    @property
    def p10(self) -> float:
        return self.b / self.pairs.n if self.pairs.n else math.nan

    @property
    def p01(self) -> float:
        return self.c / self.pairs.n if self.pairs.n else math.nan

    @property
    def psi(self) -> float:
        return (self.b + self.c) / self.pairs.n if self.pairs.n else math.nan


def icc_label(icc: float, note: str) -> str:
    """The ICC as a table prints it: "1.00 assumed" where the pilot could not estimate it (no
    discordance to correlate, so its seeds are counted, not its pairs), not a measured 1."""
    return f"{icc:.2f}" + (" assumed" if note.startswith("assumed") else "")


def binary(x: ArrayLike, y: ArrayLike, clusters: ArrayLike) -> Binary:
    """x, y: 0/1 outcomes of the strategy and the reference on the same pairs."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    z = x - y  # +1 strategy won, -1 reference won, 0 concordant
    return Binary(_pairs(z, clusters), int((z > 0).sum()), int((z < 0).sum()))


def binary_power(d: Binary, alpha: float, k: int, effect: float = EFFECT, target: float = TARGET) -> dict:
    """Power to detect ``effect`` and the MDE at ``target`` power, at Holm's first step
    alpha/k with the comparison's own discordance, of the test the report runs: exact
    McNemar on the pairs when each seed has one; with several, the seed sign-flip test,
    simulated with the comparison's seeds, pairs per seed and ICC (``seedpower``).

    The discordance under the alternative is the observed one, raised to the effect
    when smaller (``power.split``); with no pairs both are NaN.
    """
    if not d.pairs.n:
        return {"power": math.nan, "mde": math.nan}
    a, n_eff = sizing.holm_alpha(alpha, k), math.floor(d.pairs.n_eff)
    if d.pairs.per_seed > 1:
        s, m, icc = d.pairs.seeds, max(2, round(d.pairs.per_seed)), d.pairs.icc
        return {
            "power": seedpower.power(s, m, icc, *sizing.split(d.psi, effect), a),
            "mde": seedpower.mde(s, m, icc, d.psi, a, target),
        }
    return {
        "power": sizing.mcnemar_power(n_eff, *sizing.split(d.psi, effect), a),
        "mde": sizing.mcnemar_mde(n_eff, d.psi, a, target),
    }


@dataclass(frozen=True)
class Continuous:
    """Paired differences (strategy - reference) of one measure; ``seed_sd`` is the SD of
    their per-seed means (NaN with one pair per seed)."""

    pairs: Pairs
    mean: float
    sd: float
    seed_sd: float = math.nan


def seed_means(diff: ArrayLike, clusters: ArrayLike) -> np.ndarray:
    """Mean difference per task seed: the units of the report's signed-rank test when a
    seed has several reps (they share the seed's luck, so they are one observation)."""
    d = np.asarray(diff, float)
    _, codes = np.unique(np.asarray(clusters).astype(str), return_inverse=True)
    return np.bincount(codes, weights=d) / np.bincount(codes) if d.size else d


def continuous(diff: ArrayLike, clusters: ArrayLike) -> Continuous:
    d = np.asarray(diff, float)
    sd = float(d.std(ddof=1)) if d.size > 1 else math.nan
    pairs = _pairs(d, clusters)
    means = seed_means(d, clusters)
    seed_sd = float(means.std(ddof=1)) if pairs.per_seed > 1 and means.size > 1 else math.nan
    return Continuous(pairs, float(d.mean()) if d.size else math.nan, sd, seed_sd)


def continuous_mde(
    c: Continuous, alpha: float, k: int, target: float = TARGET, are: float = sizing.ARE_MIN
) -> float:
    """Smallest mean shift the signed-rank test detects at alpha/k with ``target`` power:
    on the pairs, or with several reps per seed on the seed means (their own SD, no ICC
    needed; inf with fewer seeds than the test needs to reach alpha/k at all)."""
    if not c.pairs.n:
        return math.nan
    a = sizing.holm_alpha(alpha, k)
    if c.pairs.per_seed > 1 and c.pairs.seeds < seedpower.min_seeds(a):
        return math.inf  # whatever the spread: these seeds cannot reach alpha/k
    if not c.sd > 0:
        return math.nan  # no spread in the pilot to scale a shift by
    if c.pairs.per_seed > 1:
        return sizing.paired_mde(c.pairs.seeds, c.seed_sd, a, target, are) if c.seed_sd > 0 else math.nan
    return sizing.paired_mde(c.pairs.n_eff, c.sd, a, target, are)
