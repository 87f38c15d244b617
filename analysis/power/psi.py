"""The discordant share psi of a paired success comparison, two ways, and which one a pilot measured.

A study's power rests on psi = p10 + p01, the share of pairs in which exactly one side
succeeds. How large it is depends on where the two sides' luck comes from:

  shared draws (the sim's common random numbers, `model.draws=shared`): both sides of a pair
      make the same draws wherever their contexts agree, so they disagree only where the
      contexts differ: psi is close to |delta| (disagreements are one-sided);
  independent draws (`model.draws=independent`, and every real model, whose sampling is its
      own): psi = p1 (1 - p2) + p2 (1 - p1) for success rates p1, p2.

A study sized from a shared-draws pilot's psi is too small for a real model: the planner shows
both and warns. Trials recorded before the switch existed were all shared (`param.model.draws`
missing, provider sim/oracle).
"""

from __future__ import annotations

import math

import pandas as pd

SIM_PROVIDERS = ("sim", "oracle")
WARNING = (
    "WARNING: this pilot's psi comes from shared draws (common random numbers): the sides of a pair "
    "disagree only where their contexts differ, so psi is smaller than with independent draws (down to "
    "|delta| where the contexts never differ by luck). A real model draws independently "
    "(psi ~ p1(1-p2) + p2(1-p1)); size a real-model study with the 'psi independent' columns, or run "
    "the pilot with model.draws=independent."
)


def independent(p1: float, p2: float) -> float:
    """psi when the two sides draw independently, from their success rates."""
    return p1 * (1 - p2) + p2 * (1 - p1)


def shared(delta: float) -> float:
    """psi's floor when the two sides share their draws: one-sided disagreement, |delta|."""
    return abs(delta)


def draws(trials: pd.DataFrame) -> str:
    """How the pilot's trials drew: shared, independent or mixed. A real model always draws on
    its own; a sim trial without `param.model.draws` predates the switch and shared."""
    blank = pd.Series("", index=trials.index)
    provider = trials.get("param.model.provider", blank).fillna("").astype(str)
    mode = trials.get("param.model.draws", blank).fillna("").astype(str)
    is_sim = provider.isin(SIM_PROVIDERS) | (provider == "")
    kinds = set(mode.where(~is_sim, mode.where(mode != "", "shared")).where(is_sim, "independent"))
    return kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "shared")


def both_ways(rate: float, rate_ref: float, psi_observed: float) -> dict[str, float]:
    """The observed psi beside what shared and independent draws imply at these rates."""
    delta = rate - rate_ref
    return {"psi": psi_observed, "psi_shared": shared(delta), "psi_independent": independent(rate, rate_ref)}


def table(vs: pd.DataFrame, mode: str) -> pd.DataFrame:
    """Per comparison of `tables.success_vs_reference`: psi observed, shared and independent."""
    rows = []
    for r in vs.itertuples():
        w = both_ways(float(r.rate), float(r.rate_ref), float(r.psi))
        rows.append(
            {
                "arm": r.arm,
                "strategy": r.strategy,
                "rate": r.rate,
                "rate_ref": r.rate_ref,
                "psi (pilot)": w["psi"],
                "pilot draws": mode,
                "psi if shared": w["psi_shared"],
                "psi if independent": w["psi_independent"],
                "ratio": w["psi_independent"] / w["psi"] if w["psi"] > 0 else math.inf,
            }
        )
    return pd.DataFrame(rows)
