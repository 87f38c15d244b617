"""Which conclusions survive the sim's assumptions: a sensitivity study's verdict table.

    python -m bench -m experiment=sensitivity          # conf/experiment/sensitivity.yaml
    python -m analysis.sensitivity sensitivity         # this table, for the study of that name

A sensitivity study runs the same cells at several points of the sim's parameter space
(`+sensitivity=POINT`, conf/sensitivity/). At each point every pairwise strategy comparison
is made as the report makes it -- paired on (arm, task, seed, rep), exact McNemar on success
and Wilcoxon signed-rank on prompt tokens, Holm over the comparisons of the point -- and the
table shows its sign and significance point by point. A conclusion *survives* when its sign is
the same at every point; it survives *as significant* when it is also significant at every
point. A comparison significant at the base point that flips or fades elsewhere rests on an
assumption of the sim, not on a property of the strategies.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from analysis.load import POINT, STRATEGY_ORDER
from analysis.stats.inference import holm, mcnemar_exact, wilcoxon_paired

PAIR = ["arm", "task_family", "task_seed", "rep"]
MEASURES = {"success": "success", "tokens": "tokens_input_total"}


def comparisons(trials: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """One row per (point, measure, comparison): diff (first minus second), n pairs, Holm p."""
    rows = []
    order = {s: i for i, s in enumerate(STRATEGY_ORDER)}
    for point, g in trials.groupby(POINT):
        strategies = sorted(g["strategy"].unique(), key=lambda s: (order.get(s, 99), s))
        for measure, col in MEASURES.items():
            found = []
            for a, b in combinations(strategies, 2):
                m = g[g.strategy == a].merge(g[g.strategy == b], on=PAIR, suffixes=("_a", "_b"))
                x, y = m[f"{col}_a"].astype(float), m[f"{col}_b"].astype(float)
                if measure == "success":
                    p = mcnemar_exact(int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum()))
                else:
                    p = wilcoxon_paired(x, y)[1]
                found.append(
                    {
                        "point": point,
                        "measure": measure,
                        "comparison": f"{a} vs {b}",
                        "pairs": len(m),
                        "diff": float((x - y).mean()) if len(m) else np.nan,
                        "p": p,
                    }
                )
            adj = holm([r["p"] for r in found])
            for r, q in zip(found, adj, strict=True):
                rows.append({**r, "p_holm": q, "significant": bool(q < alpha)})
    return pd.DataFrame(rows)


def _cell(r: pd.Series, measure: str) -> str:
    if pd.isna(r["diff"]):
        return "–"
    if r["diff"] == 0:
        return f"0 (p={r['p_holm']:.2g})"
    value = f"{r['diff']:+.2f}" if measure == "success" else f"{r['diff']:+,.0f}"
    return f"{value}{' *' if r['significant'] else ''} (p={r['p_holm']:.2g})"


def verdict(rows: pd.DataFrame) -> str:
    signs = np.sign(rows.set_index("point")["diff"].dropna())
    if signs.empty or (signs == 0).all():
        return "no difference anywhere"
    nonzero = signs[signs != 0]
    ref = signs["base"] if "base" in signs.index and signs["base"] != 0 else nonzero.mode().iloc[0]
    reverses, vanishes = sorted(signs.index[signs == -ref]), sorted(signs.index[signs == 0])
    if reverses or vanishes:
        return "no: " + "; ".join(
            part
            for part in (
                "reverses at " + ", ".join(reverses) if reverses else "",
                "vanishes at " + ", ".join(vanishes) if vanishes else "",
            )
            if part
        )
    if rows["significant"].all():
        return "yes, significant at every point"
    return f"sign yes; significant at {int(rows['significant'].sum())} of {len(rows)} points"


def table(comp: pd.DataFrame, measure: str, points: list[str]) -> str:
    sub = comp[comp["measure"] == measure]
    head = ["comparison", *points, "survives?"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for name, rows in sub.groupby("comparison", sort=False):
        by = {r["point"]: _cell(r, measure) for _, r in rows.iterrows()}
        lines.append("| " + " | ".join([str(name), *(by.get(p, "–") for p in points), verdict(rows)]) + " |")
    return "\n".join(lines) + "\n"


def by_point(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials that ran at a sensitivity point (analysis.load keeps one per identity and point)."""
    if POINT not in trials:
        return trials.iloc[0:0]
    out = trials[trials[POINT].fillna("").astype(str) != ""].copy()
    out["success"] = pd.to_numeric(out["success"], errors="coerce").fillna(0).astype(int)
    return out


def section(trials: pd.DataFrame) -> str:
    """The report's "which conclusions survive" section ("" when the study is no sensitivity study)."""
    trials = by_point(trials)
    if trials.empty:
        return ""
    comp = comparisons(trials)
    found = list(comp["point"].unique())
    points = ["base", *sorted(p for p in found if p != "base")] if "base" in found else sorted(found)
    varies = (
        trials.groupby(POINT)["param.sensitivity.varies"].first()
        if "param.sensitivity.varies" in trials
        else {}
    )
    n = trials.groupby(POINT).size()
    lines = [
        "## Which conclusions survive",
        "",
        "Each strategy comparison at each point of the sensitivity sweep (conf/sensitivity/): the sign and "
        "size of the paired difference (first strategy minus second), its Holm-adjusted p over the "
        "comparisons of that point, `*` where p < 0.05. Points: "
        + "; ".join(f"`{p}` ({varies.get(p, '?')}, {int(n.get(p, 0))} trials)" for p in points)
        + ".",
        "",
        "### Success (exact McNemar over paired tasks)",
        "",
        table(comp, "success", points),
        "### Prompt tokens (Wilcoxon signed-rank)",
        "",
        table(comp, "tokens", points),
    ]
    return "\n".join(lines)
