"""Maximum likelihood for the recall / temptation / stale-edit parameters, profile-likelihood intervals.

Parameters no observation's probability depends on keep their prior and are reported as such
(`informing` counts, per parameter, the observations that move with it). The curve's shape
parameters (likelihood.SHAPE) stay at their prior unless `free` names them: a few trials
rarely span the lengths that would tell `rot_half_tokens` from `rot_max_drop`.

Intervals are profile-likelihood intervals (the set of values a likelihood-ratio test at
1 - `level` does not reject, every other free parameter re-fitted): unlike Wald intervals they
stay inside [0, 1] and stay honest at a boundary (recall_recent = 1). The observations are
taken as independent given the parameters: for the sim that holds once repeats of one random
draw are kept once (`dedupe`), for a real model it ignores trial-to-trial heterogeneity
(docs/calibration.md, "What the intervals mean").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats
from threadpoolctl import threadpool_limits

from analysis.calibrate.likelihood import FREE, KINDS, Design, informing, informing_rows, nll, nll_grad
from analysis.calibrate.observe import Obs

BOUNDS = {
    "recent_tokens": (0.0, 20000.0),
    "rot_half_tokens": (1000.0, 1e6),
    "rot_shape": (0.2, 6.0),
    "middle_shape": (0.2, 6.0),
    "middle_half_tokens": (100.0, 1e5),
}


@dataclass
class Estimate:
    value: float
    low: float | None  # None: not fitted (prior kept)
    high: float | None
    n: int  # observations whose probability depends on it
    source: str  # "fitted" | "prior (...reason...)"


@dataclass
class RecallFit:
    estimates: dict[str, Estimate]
    params: dict[str, float]  # the full parameter set at the estimate (priors where not fitted)
    n_obs: dict[str, int] = field(default_factory=dict)  # per observation kind, after dedupe
    nll: float = 0.0


def dedupe(obs: Sequence[Obs]) -> list[Obs]:
    """One observation per draw key, the first in log order: repeats share one uniform."""
    seen, out = set(), []
    for o in obs:
        if (o.kind, o.key) not in seen:
            seen.add((o.kind, o.key))
            out.append(o)
    return out


def fit_recall(
    obs: Sequence[Obs], prior: Mapping[str, float], *, free: Sequence[str] = (), level: float = 0.95
) -> RecallFit:
    # Hundreds of tiny optimisations: a multi-threaded BLAS only spins (10x the CPU on 2 busy cores).
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit_recall(obs, prior, free, level)


def _fit_recall(
    obs: Sequence[Obs], prior: Mapping[str, float], free: Sequence[str], level: float
) -> RecallFit:
    d = Design.of(obs)
    p0 = {k: float(v) for k, v in prior.items()}
    counts = informing(p0, d, [*FREE, *free])
    names = [n for n in [*FREE, *free] if counts[n] > 0]
    bounds = [BOUNDS.get(n, (0.0, 1.0)) for n in names]

    def unpack(x: np.ndarray, fixed: Mapping[str, float] | None = None) -> dict[str, float]:
        return {**p0, **dict(zip(names, map(float, x), strict=True)), **(fixed or {})}

    def solve(start: np.ndarray, fixed: dict[str, float], starts: int = 1) -> tuple[np.ndarray, float]:
        idx = [i for i, n in enumerate(names) if n not in fixed]
        if not idx:
            return start, nll(unpack(start, fixed), d)
        sub = [bounds[i] for i in idx]

        exact = all(names[i] in FREE for i in idx)

        def f(z: np.ndarray):
            x = start.copy()
            x[idx] = z
            if exact:
                return nll_grad(unpack(x, fixed), d, [names[i] for i in idx])
            return nll(unpack(x, fixed), d)

        best = None
        for s in (start[idx], np.array([(lo + hi) / 2 for lo, hi in sub]))[:starts]:
            r = optimize.minimize(
                f,
                np.clip(s, [lo for lo, _ in sub], [hi for _, hi in sub]),
                method="L-BFGS-B",
                bounds=sub,
                jac=exact,
            )
            if best is None or r.fun < best.fun:
                best = r
        assert best is not None
        x = start.copy()
        x[idx] = best.x
        return x, float(best.fun)

    start = np.array(
        [
            min(max(p0[n], lo + 0.02 * (hi - lo)), hi - 0.02 * (hi - lo))
            for n, (lo, hi) in zip(names, bounds, strict=True)
        ]
    )
    x_hat, f_hat = solve(start, {}, starts=2)
    fitted = unpack(x_hat)
    cut = stats.chi2.ppf(level, 1) / 2
    estimates = {}
    for i, n in enumerate(names):
        lo, hi = _profile(lambda v, n=n: solve(x_hat, {n: v})[1] - f_hat - cut, x_hat[i], bounds[i])
        estimates[n] = Estimate(
            fitted[n], lo, hi, counts[n], f"fitted (profile likelihood: {_kinds(d, n, fitted)})"
        )
    for n in [*FREE, *free]:
        if n not in estimates:
            estimates[n] = Estimate(p0[n], None, None, 0, "prior (no observation depends on it)")
    kinds = {
        k: int(np.sum(d.kind == i)) for i, k in enumerate(("handoff", "tidy", "stale_replace", "stale_write"))
    }
    return RecallFit(estimates, fitted, kinds, f_hat)


def _kinds(d: Design, name: str, p: Mapping[str, float]) -> str:
    """Which kinds of observation inform a parameter: 'hand-offs, tidy-ups'."""
    labels = {"handoff": "hand-offs", "tidy": "tidy-ups", "stale_replace": "edits", "stale_write": "writes"}
    moved = informing_rows(p, d, name)
    return ", ".join(labels[k] for i, k in enumerate(KINDS) if np.any(moved & (d.kind == i)))


def _profile(g, at: float, bounds: tuple[float, float]) -> tuple[float, float]:
    """Where g (profile deviance minus the cut) crosses 0 either side of the estimate `at`."""
    lo, hi = bounds
    out = []
    for edge in (lo, hi):
        if abs(edge - at) < 1e-12 or g(edge) <= 0:
            out.append(edge)
            continue
        out.append(optimize.brentq(g, min(at, edge), max(at, edge), xtol=1e-3 * (hi - lo)))
    return out[0], out[1]
