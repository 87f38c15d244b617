"""Latency and prompt-cache behaviour from `model_call` usage and timings.

Restated from bench/sim/usage.py:
    ttft    = latency_base_s + latency_s_per_uncached_token * (input + cache_write)
              + latency_s_per_cached_token * cache_read
    latency = ttft + decode_s_per_token * output
and the prefix cache counts whole `cache_block_tokens` blocks, nothing below `cache_min_tokens`.

The latencies are two ordinary least-squares regressions with t intervals (ttft on the prompt's
uncached and cached tokens; the decoding time on output tokens, through the origin), widened by
what the log's rounding of timings to 0.1 ms can do to them. A real
provider's timings are noisier and heteroscedastic; the intervals then say how well the mean
is known, not how much one call varies. The cache's block is the greatest common divisor of
the cached token counts; its minimum is bracketed by the largest prompt that cached nothing
and the smallest that cached something. `cache_ttl_s` keeps its prior unless a pause longer
than it shows in the log (it seldom does).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, stats

from analysis.calibrate.fit import Estimate
from ctxlog import events as ev
from ctxlog.reader import Log

ROUNDING = 1e-4  # seconds: the event log rounds latencies to 4 decimals (bench/trial/loop.py)


@dataclass(frozen=True)
class Call:
    input: int
    output: int
    cache_read: int
    cache_write: int
    ttft: float | None
    latency: float | None


def calls(log: Log | Iterable[dict[str, Any]]) -> list[Call]:
    out = []
    for r in Log.read(log).of(ev.ModelCall):
        u, t = r.usage or {}, r.t or {}
        out.append(
            Call(
                int(u.get("input", 0)),
                int(u.get("output", 0)),
                int(u.get("cache_read", 0)),
                int(u.get("cache_write", 0)),
                t.get("ttft_s"),
                t.get("latency_s"),
            )
        )
    return out


def _ols(
    x: np.ndarray, y: np.ndarray, names: list[str], level: float, what: str, rounding: float
) -> dict[str, Estimate]:
    """Least squares over the coefficients' valid range (every latency coefficient of the sim is
    >= 0: bench/sim/params.py refuses a negative one), with t intervals clipped to that range, each
    widened by the most that `rounding` (the largest error the log's rounding puts into one y) can
    shift its coefficient: h * sum_i |(X'X)^-1 X'|_ji. For a simulated model, whose timings lie on
    the line but for rounding, that term is the interval. A coefficient the data push below 0 is
    fitted at the bound, and its source says so with the unconstrained value (a real server's
    prompt cache can make cached tokens look like they save time, the fit then wants < 0)."""
    n, k = x.shape
    if n <= k or np.linalg.matrix_rank(x) < k:
        return {}
    free, *_ = np.linalg.lstsq(x, y, rcond=None)
    fit = optimize.lsq_linear(x, y, bounds=(0.0, np.inf), method="bvls")
    beta = np.where(fit.active_mask < 0, 0.0, fit.x)  # exactly at the bound where it is active
    resid = y - x @ beta
    s2 = float(resid @ resid) / (n - k)
    se = np.sqrt(np.diag(s2 * np.linalg.inv(x.T @ x)))
    half = stats.t.ppf(0.5 + level / 2, n - k) * se + rounding * np.abs(np.linalg.pinv(x)).sum(axis=1)
    out = {}
    for name, b, h, f, active in zip(names, beta, half, free, fit.active_mask, strict=True):
        at_bound = bool(active < 0)
        source = (
            f"fitted at the lower bound 0 ({what}; unconstrained {f:.4g})" if at_bound else f"fitted ({what})"
        )
        out[name] = Estimate(float(b), max(float(b - h), 0.0), max(float(b + h), 0.0), n, source)
    return out


def fit_latency(cs: list[Call], level: float = 0.95) -> dict[str, Estimate]:
    timed = [c for c in cs if c.ttft is not None and c.latency is not None]
    if not timed:
        return {}
    x = np.array([[1.0, c.input + c.cache_write, c.cache_read] for c in timed])
    out = _ols(
        x,
        np.array([c.ttft for c in timed], dtype=float),
        ["latency_base_s", "latency_s_per_uncached_token", "latency_s_per_cached_token"],
        level,
        "ttft regression",
        ROUNDING / 2,
    )
    decoding = [c for c in timed if c.output > 0]
    out.update(
        _ols(
            np.array([[float(c.output)] for c in decoding]),
            np.array([c.latency - c.ttft for c in decoding], dtype=float),  # type: ignore[operator]
            ["decode_s_per_token"],
            level,
            "decoding time per output token",
            ROUNDING,
        )
    )
    return out


def fit_cache(cs: list[Call], prior: dict[str, float]) -> dict[str, Estimate]:
    cached = [v for c in cs for v in (c.cache_read, c.cache_write) if v > 0]
    out: dict[str, Estimate] = {}
    if cached:
        block = 0
        for v in cached:
            block = math.gcd(block, v)
        out["cache_block_tokens"] = Estimate(
            float(block),
            float(block),
            float(block),
            len(cached),
            "exact (greatest common divisor of the cached token counts)",
        )
    prompt = [(c.input + c.cache_read + c.cache_write, c.cache_read + c.cache_write > 0) for c in cs]
    none = [n for n, hit in prompt if not hit]
    some = [n for n, hit in prompt if hit]
    if some:
        low, high = float(max([n for n in none if n < min(some)], default=0) + 1), float(min(some))
        value = min(max(float(prior["cache_min_tokens"]), low), high)
        out["cache_min_tokens"] = Estimate(
            value, low, high, len(prompt), "bracketed (largest prompt that cached nothing, smallest that did)"
        )
    return out
