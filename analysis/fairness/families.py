"""Task family as a level of the analysis: per-family effects, a heterogeneity test, and the
variance decomposition of success.

Per family: the paired success difference of each strategy against the reference in each arm
(same pairs as `tables.success_vs_reference`), and across families Cochran's Q on those
differences, each weighted by the inverse of its variance (Connor's, (psi - d^2) / n, with
half a discordant pair added each way, so a family with no disagreement, or all of it one way,
still has a variance and cannot take all the weight), with I^2 = max(0, (Q - df) / Q). A small p says the pooled effect hides families
that go different ways: report them apart.

Variance decomposition (linear probability model): success's sum of squares split into
family, seed within family (nested: not estimable with one seed per family), strategy, arm, strategy x arm, strategy x family, and the rest
(reps and higher interactions). In a balanced study these terms are orthogonal, so the shares
add up; `balanced` says whether the study was. With several reps, `seed_icc` is the mean over
cells of the within-seed correlation of reps: near 0, the "seed" share is the draws' luck,
not task difficulty.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as st

from analysis.load import CELL, PAIR_KEY
from analysis.power import sizing

FAMILY = "task_family"


def _paired(trials: pd.DataFrame, reference: str) -> pd.DataFrame:
    base = trials.loc[trials["strategy"] == reference, ["arm", *PAIR_KEY, "success"]]
    other = trials.loc[trials["strategy"] != reference, ["arm", "strategy", *PAIR_KEY, "success"]]
    return other.merge(base, on=["arm", *PAIR_KEY], suffixes=("", "_ref"))


def per_family(trials: pd.DataFrame, reference: str = "raw") -> pd.DataFrame:
    """One row per (arm, strategy, family): pairs, rates, difference and its variance."""
    p = _paired(trials, reference)
    rows = []
    for (arm, strategy, family), g in p.groupby(["arm", "strategy", FAMILY], sort=True):
        x, y = g["success"].astype(float), g["success_ref"].astype(float)
        n, b, c = len(g), int(((x - y) > 0).sum()), int(((x - y) < 0).sum())
        d = (b - c) / n
        bb, cc, nn = (
            b + 0.5,
            c + 0.5,
            n + 1,
        )  # half a pair each way: d = ±1 or no discordance still has a variance
        var = ((bb + cc) / nn - ((bb - cc) / nn) ** 2) / nn
        rows.append(
            {
                "arm": arm,
                "strategy": strategy,
                "family": family,
                "n_pairs": n,
                "rate": x.mean(),
                "rate_ref": y.mean(),
                "diff": d,
                "var": var,
                "b": b,
                "c": c,
            }
        )
    return pd.DataFrame(rows)


def heterogeneity(fam: pd.DataFrame) -> pd.DataFrame:
    """Cochran's Q across families per (arm, strategy), with I^2 and the pooled (fixed-effect) difference."""
    rows = []
    for (arm, strategy), g in fam.groupby(["arm", "strategy"], sort=True):
        w = 1.0 / g["var"].to_numpy()
        d = g["diff"].to_numpy()
        pooled = float((w * d).sum() / w.sum())
        q = float((w * (d - pooled) ** 2).sum())
        df = len(g) - 1
        rows.append(
            {
                "arm": arm,
                "strategy": strategy,
                "families": len(g),
                "pooled_diff": pooled,
                "Q": q,
                "df": df,
                "p": float(st.chi2.sf(q, df)) if df > 0 else math.nan,
                "I2": max(0.0, (q - df) / q) if q > 0 else 0.0,
                "by_family": ", ".join(f"{f} {x:+.2f}" for f, x in zip(g["family"], d, strict=True)),
            }
        )
    return pd.DataFrame(rows)


def _ss(y: pd.Series, frame: pd.DataFrame, keys: list[str]) -> tuple[float, int]:
    """Sum of squares of the group means of `keys` around the grand mean, weighted by group
    size, and the number of groups less one (its degrees of freedom before lower terms)."""
    g = y.groupby([frame[k] for k in keys])
    return float((g.transform("mean") - y.mean()).pow(2).sum()), g.ngroups - 1


def variance(trials: pd.DataFrame) -> pd.DataFrame:
    """Shares of success's sum of squares (linear probability model), with each term's degrees
    of freedom, mean square and F; `balanced`, `reps`, `seed_icc` and `n` in attrs.

    Seed is nested in family: its term is what the task means vary around their family's mean,
    with (tasks - families) degrees of freedom. With one seed per family it has none, so it is
    printed as not estimable (NaN), and family's row says that it holds the seed too. Family is
    tested against seed within family (the nested design's error for a family), the other
    terms against the residual; all F are approximate (a 0/1 outcome)."""
    t = trials.assign(task=trials[FAMILY].astype(str) + "#" + trials["task_seed"].astype(str))
    y = t["success"].astype(float)
    total = float((y - y.mean()).pow(2).sum())
    fam, strat, arm = _ss(y, t, [FAMILY]), _ss(y, t, ["strategy"]), _ss(y, t, ["arm"])
    task, cell, sf = _ss(y, t, ["task"]), _ss(y, t, list(CELL)), _ss(y, t, ["strategy", FAMILY])
    seed = (task[0] - fam[0], task[1] - fam[1])
    name = "family" if seed[1] > 0 else "family (holds the seed too: 1 seed per family)"
    terms = {
        name: fam,
        "seed (within family)": seed,
        "strategy": strat,
        "arm": arm,
        "strategy x arm": (cell[0] - strat[0] - arm[0], cell[1] - strat[1] - arm[1]),
        "strategy x family": (sf[0] - strat[0] - fam[0], sf[1] - strat[1] - fam[1]),
    }
    terms["residual (reps, other interactions)"] = (
        total - sum(x for x, _ in terms.values()),
        len(t) - 1 - sum(d for _, d in terms.values()),
    )
    out = pd.DataFrame(
        {"term": list(terms), "df": [d for _, d in terms.values()], "sum_sq": [x for x, _ in terms.values()]}
    )
    out["share"] = (out["sum_sq"] / total if total > 0 else math.nan).where(out["df"] > 0)
    out["mean_sq"] = (out["sum_sq"] / out["df"]).where(out["df"] > 0)
    resid, nested = "residual (reps, other interactions)", "seed (within family)"
    against = [nested if (x == name and seed[1] > 0) else resid for x in out["term"]]
    by = out.set_index("term")
    out["F vs"] = [a.split(" (")[0] if x != resid else "" for x, a in zip(out["term"], against, strict=True)]
    out["F"] = (out["mean_sq"] / by.loc[against, "mean_sq"].to_numpy()).where(out["F vs"] != "")
    out["p"] = [
        float(st.f.sf(f, d1, d2)) if pd.notna(f) and d2 > 0 else math.nan
        for f, d1, d2 in zip(out["F"], out["df"], by.loc[against, "df"].to_numpy(), strict=True)
    ]
    cells = t.groupby([*CELL, "task"]).size()
    out.attrs["balanced"] = bool(
        cells.nunique() == 1 and len(cells) == t[list(CELL)].drop_duplicates().shape[0] * t["task"].nunique()
    )
    out.attrs["reps"] = int(cells.min()) if len(cells) else 0
    iccs = [sizing.icc_oneway(g["success"].astype(float), g["task"]) for _, g in t.groupby(list(CELL))]
    iccs = [x for x in iccs if not math.isnan(x)]
    out.attrs["seed_icc"] = float(np.mean(iccs)) if iccs else math.nan
    out.attrs["n"] = len(t)
    return out
