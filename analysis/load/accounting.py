"""Every planned trial counted (docs/studies.md): a study's plan against what ran.

Each planned trial is in exactly one state:

  finished  it has a verdict (a FINISHED run: success or agent failure) and is analysed
  excluded  it ran but has no verdict: an infrastructure failure, an interruption, a run still
            RUNNING, or a verdict superseded by a newer run of the same trial
  missing   it never ran (the study stopped early, its job crashed, it is still queued)

Per protocol, success is counted over finished trials; by intention to treat, over every
planned trial, an excluded or missing one counting as a failure. A study without a plan (begun
before plans were recorded, or single runs) counts what ran as planned: it cannot show missing
trials, and a note says so. A finished trial its study's plan does not name (a single run
given the study's name) is `unplanned`, counted beside the plan, never silently inside it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.load.runs import CELL, PAIR_KEY, POINT, Runs, _as_int

STATES = ("finished", "excluded", "missing")
_IDENTITY = (*CELL, "model", "task_family", "task_seed", POINT, "rep")


def outcome_class(runs: pd.DataFrame) -> pd.Series:
    """The one place the analysis classes a run: the harness's own `outcome_class` tag when the
    run carries one; for older runs, from the MLflow status (FINISHED = a verdict, FAILED =
    infrastructure failure, KILLED = interrupted, RUNNING = no result yet)."""
    status = runs["mlflow_status"]
    derived = pd.Series(
        np.select(
            [
                status.eq("FINISHED") & runs["success"].eq(1),
                status.eq("FINISHED"),
                status.eq("FAILED"),
                status.eq("KILLED"),
            ],
            ["success", "agent_failure", "infrastructure_failure", "interrupted"],
            default="running",
        ),
        index=runs.index,
    )
    tag = runs["outcome_class"] if "outcome_class" in runs else None
    return derived if tag is None else tag.where(tag.notna() & tag.ne(""), derived)


def _keys(frame: pd.DataFrame) -> pd.Series:
    # A trial is its config hash; hand-made runs without one fall back to their identity.
    ident = frame["study"].astype(str)
    for col in _IDENTITY:
        ident = ident + "|" + frame[col].astype(str)
    h = frame["config_hash"] if "config_hash" in frame else pd.Series(None, index=frame.index, dtype=object)
    return h.where(h.notna() & h.ne(""), "identity:" + ident)


def _reason(r) -> str:
    if r.mlflow_status == "FINISHED":
        return "superseded"  # its verdict was replaced by a newer run of the same identity
    return str(r.failure_reason or r.cls)


def planned_trials(runs: Runs) -> pd.DataFrame:
    """One row per planned trial (and per unplanned one that finished): its identity,
    `planned_by` (plan | ran: its study has no plan | unplanned), `state`, `reason` (why
    excluded), `success` (1 only for a finished success: the intention-to-treat outcome) and
    `run_id` (its latest run)."""
    cols = ["study", "key", *_IDENTITY, "planned_by", "state", "reason", "success", "run_id"]
    ran = pd.concat(
        [runs.trials.assign(analysed=True), runs.excluded.assign(analysed=False)], ignore_index=True
    )
    if ran.empty:
        ran = pd.DataFrame(
            columns=[
                "study",
                "key",
                *_IDENTITY,
                "analysed",
                "mlflow_status",
                "failure_reason",
                "success",
                "run_id",
                "start_time",
            ]
        )
    else:
        ran = ran.assign(key=_keys(ran), cls=outcome_class(ran)).sort_values("start_time", kind="stable")
    key = ["study", "key"]
    latest = ran.drop_duplicates(key, keep="last")
    verdicts = ran.loc[ran["analysed"].astype(bool)]
    plan = runs.plan.rename(columns={"config_hash": "key"}).assign(planned_by="plan")
    with_plan = latest["study"].isin(set(plan["study"]))
    in_plan = verdicts.set_index(key).index.isin(plan.set_index(key).index)
    rows = pd.concat(
        [
            plan,
            latest.loc[~with_plan].assign(planned_by="ran"),
            verdicts.loc[verdicts["study"].isin(set(plan["study"])) & ~in_plan].assign(
                planned_by="unplanned"
            ),
        ],
        ignore_index=True,
    )[[*key, *_IDENTITY, "planned_by"]]
    last = latest.assign(reason=[_reason(r) for r in latest.itertuples()])[[*key, "reason", "run_id"]]
    rows = rows.merge(last, on=key, how="left").merge(
        verdicts[[*key, "success"]].assign(finished=True), on=key, how="left"
    )
    rows["state"] = np.where(
        rows["finished"].eq(True), "finished", np.where(rows["run_id"].notna(), "excluded", "missing")
    )
    rows["reason"] = rows["reason"].where(rows["state"] == "excluded", "")
    rows["success"] = rows["success"].where(rows["state"] == "finished", 0).fillna(0).astype(int)
    rows["task_seed"], rows["rep"] = _as_int(rows["task_seed"]), _as_int(rows["rep"])
    return rows[cols]


def notes(acc: pd.DataFrame) -> list[str]:
    """What the reader must know about the accounting: studies without a plan, unplanned runs."""
    out = []
    for study in sorted(acc.loc[acc["planned_by"] == "ran", "study"].unique()):
        out.append(
            f"study {study!r} has no plan (single runs, or begun before plans were recorded): "
            "planned = what ran; missing trials cannot be counted"
        )
    running = int((acc["reason"] == "running").sum())
    if running:
        out.append(
            f"{running} planned trial(s) have only a RUNNING run: still running, or their process died and "
            "the study was not resumed since (a resume marks them KILLED and reruns them)"
        )
    n = int((acc["planned_by"] == "unplanned").sum())
    if n:
        out.append(
            f"{n} finished trial(s) not in their study's plan (e.g. single runs given the study's name): "
            "counted as `unplanned`, in both success columns"
        )
    return out


def cell_counts(acc: pd.DataFrame) -> pd.DataFrame:
    """Per cell: planned, unplanned, finished, excluded (and by reason), missing, and the
    intention-to-treat population (planned + unplanned) with its successes."""
    cols = [
        *CELL,
        "planned",
        "unplanned",
        "finished",
        "excluded",
        "missing",
        "excluded_by_reason",
        "itt_n",
        "itt_successes",
    ]
    if acc.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for cell, g in acc.groupby(list(CELL), sort=False):
        reasons = g.loc[g["state"] == "excluded", "reason"].value_counts()
        rows.append(
            {
                **dict(zip(CELL, cell, strict=True)),
                "planned": int((g["planned_by"] != "unplanned").sum()),
                "unplanned": int((g["planned_by"] == "unplanned").sum()),
                **{s: int((g["state"] == s).sum()) for s in STATES},
                "excluded_by_reason": ", ".join(f"{r} {n}" for r, n in sorted(reasons.items())),
                "itt_n": len(g),
                "itt_successes": int(g["success"].sum()),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def dropped_pairs(acc: pd.DataFrame, reference: str) -> pd.DataFrame:
    """Per (arm, strategy != reference): pairs planned (the trial and its reference twin, same
    study, model, task seed and rep), and those dropped from the paired tests because one side
    was excluded (else: because one side is missing)."""
    cols = ["arm", "strategy", "n_pairs_planned", "pairs_dropped_excluded", "pairs_dropped_missing"]
    if acc.empty:
        return pd.DataFrame(columns=cols)
    keys = ["arm", *PAIR_KEY]
    base = acc.loc[acc["strategy"] == reference, [*keys, "state"]]
    p = acc.loc[acc["strategy"] != reference, [*keys, "strategy", "state"]].merge(
        base, on=keys, suffixes=("", "_ref")
    )
    both = p["state"].eq("finished") & p["state_ref"].eq("finished")
    excl = ~both & (p["state"].eq("excluded") | p["state_ref"].eq("excluded"))
    p = p.assign(excl=excl, miss=~both & ~excl)
    out = (
        p.groupby(["arm", "strategy"])
        .agg(
            n_pairs_planned=("state", "size"),
            pairs_dropped_excluded=("excl", "sum"),
            pairs_dropped_missing=("miss", "sum"),
        )
        .reset_index()
    )
    return out[cols]
