"""The instrument's appendix: what recovery cost, what the context held, the sim against its
own closed form, how much the task seed explains, ablations, and where invariants came from.

Everything is computed from the trial table `analysis.load` reads from MLflow (never from the
harness): the per-trial measures of bench/eventlog/measures.py are metrics, the switches are
params (`param.model.mechanisms.<name>`, `param.arm.drift_kinds`, `param.ablation`,
`param.strategy.invariants_from`).

Expected success in closed form. The simulated model logs every temptation decision with the
protection q it computed from the context and its p_tempt; every tidy-up the task families
invite is a trap. A trial's `trap_hazard` metric sums p_tempt * (1 - q) over its decisions
while it was still at risk (up to the first tidy-up done), so 1 - its mean over a cell is
the sim's own expected success there (the compensator of the first-failure process: unbiased
although a trial that springs a trap stops before its later decisions). Other channels (a
step's turn budget, a clobber caught only by the final acceptance) make the observed rate
lower, never higher.
"""

from __future__ import annotations

import pandas as pd

from analysis.load import CELL, sort_cells
from analysis.stats import inference as stats

RECOVERY = (
    "first_attempt_pass_rate",
    "recovered_failures",
    "turns_to_recover",
    "stale_edits",
    "invariant_recall",
    "tidy_ups",
    "traps_taken",
    "harmless_refused",
)  # the two error kinds
MECHANISMS = ("recall_decay", "temptation", "stale_memory", "summariser_loss", "exploration", "competence")
CARRIERS = ("ledger", "subagent")  # the strategies with `invariants_from`


def _col(t: pd.DataFrame, name: str, default: object = None) -> pd.Series:
    return t[name] if name in t else pd.Series(default, index=t.index)


def _source(t: pd.DataFrame) -> pd.Series:
    """Where ledger's and subagent's carried invariants came from; a trial recorded before the
    default became `model` (no param) carried the harness's."""
    src = _col(t, "param.strategy.invariants_from").fillna("").astype(str)
    return src.where((src != "") | ~t["strategy"].isin(CARRIERS), "harness")


def variant(t: pd.DataFrame) -> pd.Series:
    """The strategy, with `:harness` when it also carried the harness-written invariants (a
    labelled channel; the default carries only the model's hand-offs)."""
    harness = (_source(t) == "harness") & t["strategy"].isin(CARRIERS)
    return t["strategy"] + harness.map(lambda h: ":harness" if h else "")


def ablation(t: pd.DataFrame) -> pd.Series:
    """Which switch a trial ran with off: `none`, a mechanism name, or `drift_kinds=[...]`."""
    label = _col(t, "param.ablation").fillna("")
    out = []
    for i, row in t.iterrows():
        if label[i] and label[i] != "none":
            out.append(str(label[i]))
            continue
        off = [m for m in MECHANISMS if str(row.get(f"param.model.mechanisms.{m}", "True")) == "False"]
        kinds = row.get("param.arm.drift_kinds")
        out.append(
            ",".join(off)
            or (f"drift_kinds={kinds}" if isinstance(kinds, str) and kinds != "None" else "none")
        )
    return pd.Series(out, index=t.index)


def recovery(t: pd.DataFrame) -> pd.DataFrame:
    """Per cell: the recovery and context measures (means) beside success, with n."""
    have = [m for m in RECOVERY if m in t]
    if not have:
        return pd.DataFrame()
    g = t.assign(variant=variant(t)).groupby(["variant", "arm"])
    out = g.agg(n=("success", "size"), success=("success", "mean"), **{m: (m, "mean") for m in have})
    return sort_cells(out.reset_index().rename(columns={"variant": "strategy"}))


def expected_vs_observed(t: pd.DataFrame) -> pd.DataFrame:
    """Per cell: the sim's closed-form expected success next to the observed rate (Wilson CI)."""
    if "trap_hazard" not in t or t["trap_hazard"].isna().all():
        return pd.DataFrame()
    rows = []
    for (strategy, arm), g in t.assign(variant=variant(t)).groupby(["variant", "arm"]):
        k, n = int(g["success"].sum()), len(g)
        lo, hi = stats.wilson(k, n)
        exp = 1.0 - g["trap_hazard"].mean()
        rows.append(
            {
                "strategy": strategy,
                "arm": arm,
                "n": n,
                "expected": exp,
                "observed": k / n,
                "ci_lo": lo,
                "ci_hi": hi,
                "within_ci": "yes" if lo <= exp <= hi else "no",
                "tidy_ups_per_trial": _col(g, "tidy_ups", 0).mean(),
            }
        )
    return sort_cells(pd.DataFrame(rows))


def seed_share(t: pd.DataFrame) -> dict:
    """How much of the outcome variance the task (family, seed) explains, and the cell
    (strategy x arm): one-way eta squared each. Plus tasks that succeed or fail in every cell,
    and those no cell can fail by construction (no risky decision anywhere: hazard 0 in every
    trial; with p_tempt < 1 no decision is certain to fail a trial)."""
    y = t["success"].astype(float)
    total = float(((y - y.mean()) ** 2).sum())
    task = t["task_family"].astype(str) + "#" + t["task_seed"].astype(str)
    cell = t["strategy"].astype(str) + "/" + t["arm"].astype(str)

    def eta(groups: pd.Series) -> float:
        means = y.groupby(groups).transform("mean")
        return float(((means - y.mean()) ** 2).sum()) / total if total else 0.0

    per_task = t.assign(task=task).groupby("task")
    rate = per_task["success"].mean()
    risk = per_task["trap_hazard"].max() if "trap_hazard" in t else None
    return {
        "n_trials": len(t),
        "n_tasks": int(task.nunique()),
        "n_cells": int(cell.nunique()),
        "task_eta2": eta(task),
        "cell_eta2": eta(cell),
        "tasks_always_succeed": int((rate == 1).sum()),
        "tasks_always_fail": int((rate == 0).sum()),
        "tasks_certain_by_construction": int((risk == 0).sum()) if risk is not None else None,
    }


def ablations(t: pd.DataFrame) -> pd.DataFrame:
    """Each switch off against all on, paired on (strategy, arm, task, rep): how the measures
    the switch drives move. A mechanism whose effect disappears shows its measure at the
    no-effect value (tidy-ups 0 without temptation, ...)."""
    label = ablation(t)
    if label.nunique() < 2 or "none" not in set(label):
        return pd.DataFrame()
    key = [*CELL, "task_family", "task_seed", "rep", "model"]
    cols = [
        "success",
        *[
            m
            for m in ("tidy_ups", "trap_hazard", "stale_edits", "first_attempt_pass_rate", "invariant_recall")
            if m in t
        ],
    ]
    base = t.loc[label == "none", key + cols]
    rows = []
    for name in sorted(set(label) - {"none"}):
        pairs = t.loc[label == name, key + cols].merge(base, on=key, suffixes=("_off", "_on"))
        if pairs.empty:
            continue
        row: dict = {
            "switched off": name,
            "n pairs": len(pairs),
            "outcome changed": int((pairs["success_off"] != pairs["success_on"]).sum()),
        }
        for c in cols:
            row[f"{c} on → off"] = f"{pairs[c + '_on'].mean():.2f} → {pairs[c + '_off'].mean():.2f}"
        rows.append(row)
    return pd.DataFrame(rows)


def invariants_from(t: pd.DataFrame) -> pd.DataFrame:
    """Ledger and subagent with the harness's invariants beside the model's own hand-offs only."""
    v = t.assign(variant=variant(t))
    v = v.loc[v["strategy"].isin(("ledger", "subagent"))]
    if v.empty:
        return pd.DataFrame()
    v = v.assign(source=_source(v))
    cols = {"n": ("success", "size"), "success": ("success", "mean")}
    cols.update(
        {m: (m, "mean") for m in ("invariant_recall", "first_attempt_pass_rate", "tidy_ups") if m in v}
    )
    out = v.groupby(["strategy", "source", "arm"]).agg(**cols).reset_index()
    return sort_cells(out, ("strategy", "arm"))
