"""Turn a ctxbench MLflow experiment into tidy pandas frames.

Only MLflow is read, never the harness: the schema is the contract (docs/design.md §10).
Everything is bulk-loaded -- one paged ``search_runs`` for the trials and one query
per curve key for the per-turn histories -- so hundreds of trials load in about a
second instead of thousands of per-run round trips.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.load import plans

# `strategy` is the trial's level: its strategy for ctxbench's own loop, or the external agent that
# played it (which also sets `agent`, empty for the own loop): an agent is a level like a strategy
# everywhere the analysis groups, pairs or plots (docs/agents.md).
TRIAL_TAGS = (
    "study",
    "strategy",
    "agent",
    "arm",
    "task_family",
    "task_seed",
    "rep",
    "model",
    "status",
    "failure_reason",
    "outcome_class",
    "config_hash",
    "git_sha",
    "final_tree_sha",
)
FINAL_METRICS = (
    "success",
    "steps_passed",
    "first_failed_step",
    "turns",
    "tokens_input_total",
    "tokens_output_total",
    "tokens_cache_read_total",
    "tokens_cache_write_total",
    "cache_hit_ratio",
    "cost_usd",
    "latency_s",
    "wall_s",
    "compactions",
    "context_truncations",
    "output_truncations",
    "drift_events",
    "invariant_violations",
    "policy_violations",
    # what recovery cost and what the context held (bench/eventlog/measures.py; docs/instrument.md)
    "first_attempt_passes",
    "first_attempt_pass_rate",
    "recovered_failures",
    "turns_to_recover",
    "stale_edits",
    "invariant_recall",
    "trap_hazard",
    "tidy_ups",
    "tidy_up_chances",
    # both error kinds of a tidy-up (bench/trial/tidy_errors.py)
    "traps_taken",
    "trap_chances",
    "harmless_refused",
    "harmless_chances",
    # the verdict without the final acceptance's hidden checks (bench/trial/hidden_checks.py)
    "success_visible",
)
CURVE_METRICS = (
    "prompt_tokens",
    "cached_tokens",
    "output_tokens",
    "context_tokens",
    "cumulative_tokens",
    "turn_latency_s",
    "ttft_s",
    "harness_tokens",
)
# Trials agreeing on PAIR_KEY but not on strategy/arm share their random draws
# (common random numbers, docs/design.md §7), so they are compared as pairs; TASK_KEY is the
# cluster: reps of one task are not independent evidence.
# A sensitivity study's point (conf/sensitivity/) or an ablation study's switch
# (conf/ablation/, as "ablation=<name>"); "" elsewhere: trials at two points ran different
# sims, so they are neither one trial twice nor a pair; still one task (cluster).
POINT = "sensitivity_point"
TASK_KEY = ("study", "model", "task_family", "task_seed")
PAIR_KEY = (*TASK_KEY, POINT, "rep")
CELL = ("strategy", "arm")
IDENTITY = (*CELL, *PAIR_KEY)

STRATEGY_ORDER = ("raw", "compaction", "ledger", "subagent")


def _point(frame: pd.DataFrame) -> pd.Series:
    """POINT per trial, as bench/study/plan.py records it in the plan."""
    blank = pd.Series("", index=frame.index)
    point = frame.get("param.sensitivity.point", blank).fillna("").astype(str)
    ablation = frame.get("param.ablation", blank).fillna("").astype(str)
    return point.where(point != "", ablation.map(lambda a: f"ablation={a}" if a else ""))


ARM_ORDER = ("baseline", "compaction", "drift", "drift_compaction")

_PAGE = 10_000
_CHUNK = 500  # run ids per IN (...) clause, well under SQLite's variable limit
# How the study's seeds were chosen (conf/config.yaml study.sample; analysis.load.labels reads them).
SAMPLE_TAGS = ("study.sample", "study.sample_note")
TRIAL_TAGS = (*TRIAL_TAGS, *SAMPLE_TAGS)


@dataclass
class Runs:
    """What `load_runs` returns.

    trials   -- one row per FINISHED trial (tags, final metrics, ``param.*`` config)
    curves   -- one row per (trial, turn) with the per-turn metrics as columns
    excluded -- trials not analysed and why (MLflow status, failure reason, duplicate)
    studies  -- the study parent runs found (study, run_id, status, has_plan)
    plan     -- every trial the studies planned (their parent runs' plan.json: study,
                config_hash and the trial's identity); analysis.load.accounting counts them
    """

    trials: pd.DataFrame
    curves: pd.DataFrame
    excluded: pd.DataFrame
    studies: pd.DataFrame
    tracking_uri: str
    experiment: str
    experiment_id: str | None = None
    study: str | None = None
    notes: list[str] = field(default_factory=list)
    plan: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def empty(self) -> bool:
        return self.trials.empty


def _rank(values: pd.Series, preferred: tuple[str, ...]) -> pd.Series:
    known = {v: i for i, v in enumerate(preferred)}
    extra = {v: len(known) + i for i, v in enumerate(sorted(set(values.dropna()) - set(known)))}
    return values.map({**known, **extra})


def sort_cells(frame: pd.DataFrame, by: tuple[str, ...] = ("strategy", "arm")) -> pd.DataFrame:
    """Rows in the design's order (raw first, baseline first) rather than alphabetical."""
    if frame.empty:
        return frame
    keys = {"strategy": STRATEGY_ORDER, "arm": ARM_ORDER}
    ranks = {f"_rank_{c}": _rank(frame[c], keys.get(c, ())) if c in keys else frame[c] for c in by}
    return (
        frame.assign(**ranks)
        .sort_values(list(ranks), kind="stable")
        .drop(columns=list(ranks))
        .reset_index(drop=True)
    )


def sqlite_path(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (relative paths are cwd-relative, as in MLflow)."""
    return Path(tracking_uri[len("sqlite:///") :]) if tracking_uri.startswith("sqlite:///") else None


def _client(tracking_uri: str):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri)


def _search(client, experiment_id: str, filter_string: str) -> list[Any]:
    runs, token = [], None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string=filter_string, max_results=_PAGE, page_token=token
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _quote(value: str) -> str:
    return "'" + value.replace("'", "\\'") + "'"


# The identity columns of a study plan's trials (plan.json; analysis/load/plans.py reads it).
PLAN_COLUMNS = ("study", "config_hash", "strategy", "arm", "model", "task_family", "task_seed", POINT, "rep")


def _trial_row(run) -> dict[str, Any]:
    tags, metrics = run.data.tags, run.data.metrics
    row: dict[str, Any] = {
        "run_id": run.info.run_id,
        "run_name": run.info.run_name,
        "mlflow_status": run.info.status,
        "start_time": run.info.start_time,
        "end_time": run.info.end_time,
        "parent_run_id": tags.get("mlflow.parentRunId"),
        "artifact_uri": run.info.artifact_uri,
    }
    for key in TRIAL_TAGS:
        row[key] = tags.get(key)
    for key in FINAL_METRICS:
        row[key] = metrics.get(key)
    for key, value in run.data.params.items():
        row[f"param.{key}"] = value
    return row


def _as_int(series: pd.Series) -> pd.Series:
    # Seeds and reps arrive as tag strings; integers sort and pair naturally.
    numeric = pd.to_numeric(series, errors="coerce")
    return numeric.astype("Int64") if numeric.notna().all() else series


def _histories(client, run_ids: Sequence[str], keys: Iterable[str]) -> pd.DataFrame:
    """All history rows of ``keys`` for ``run_ids``: run_id, key, step, timestamp, value.

    Uses the tracking store's bulk query when it has one (SQL stores do); otherwise
    falls back to one ``get_metric_history`` call per run and key.
    """
    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    bulk = getattr(store, "get_metric_history_bulk", None)
    rows: list[tuple] = []
    for key in keys:
        if bulk is not None:
            for start in range(0, len(run_ids), _CHUNK):
                chunk = list(run_ids[start : start + _CHUNK])
                for m in bulk(chunk, key, max_results=10**9):
                    rows.append((m.run_id, key, m.step, m.timestamp, m.value))
        else:
            for run_id in run_ids:
                for m in client.get_metric_history(run_id, key):
                    rows.append((run_id, key, m.step, m.timestamp, m.value))
    return pd.DataFrame(rows, columns=["run_id", "key", "step", "timestamp", "value"])


def _curves(client, trials: pd.DataFrame) -> pd.DataFrame:
    cols = ["run_id", "turn", *CURVE_METRICS]
    if trials.empty:
        return pd.DataFrame(columns=cols)
    hist = _histories(client, list(trials["run_id"]), CURVE_METRICS)
    if hist.empty:
        return pd.DataFrame(columns=cols)
    # A re-logged step keeps its latest value.
    hist = hist.sort_values(["run_id", "key", "step", "timestamp"])
    hist = hist.drop_duplicates(["run_id", "key", "step"], keep="last")
    wide = hist.pivot(index=["run_id", "step"], columns="key", values="value").reset_index()
    wide = wide.rename(columns={"step": "turn"}).rename_axis(columns=None)
    for key in CURVE_METRICS:
        if key not in wide:
            wide[key] = float("nan")
    info = trials[["run_id", "turns", *IDENTITY, "success"]]
    wide = wide.merge(info, on="run_id", how="inner")
    # Final values share keys with curves in some harness versions and are logged at
    # step == turns; a curve is turns 0..turns-1.
    wide = wide[wide["turns"].isna() | (wide["turn"] < wide["turns"])]
    wide["cache_hit_ratio"] = wide["cached_tokens"] / wide["prompt_tokens"].where(wide["prompt_tokens"] > 0)
    return wide.drop(columns=["turns"]).sort_values(["run_id", "turn"]).reset_index(drop=True)


def load_runs(
    tracking_uri: str,
    experiment: str = "ctxbench",
    study: str | None = None,
    *,
    curves: bool = True,
    client=None,
) -> Runs:
    """Load every trial of ``experiment`` (optionally one ``study``) from MLflow.

    Only FINISHED trials are analysed; FAILED/KILLED ones, and older duplicates of a
    trial identity (a study resumed or re-run), land in ``excluded`` with a reason.
    """
    empty = pd.DataFrame()
    db = sqlite_path(tracking_uri)
    if client is None and db is not None and not db.is_file():
        # MLflow would create an empty tracking db here: reading must have no side effects.
        return Runs(
            empty, empty, empty, empty, tracking_uri, experiment, None, study, [f"{db} does not exist"]
        )
    client = client or _client(tracking_uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return Runs(
            empty,
            empty,
            empty,
            empty,
            tracking_uri,
            experiment,
            None,
            study,
            [f"no MLflow experiment named {experiment!r} at {tracking_uri}"],
        )
    scope = f" AND tags.study = {_quote(study)}" if study else ""
    found = _search(client, exp.experiment_id, "tags.`ctxbench.kind` = 'trial'" + scope)
    parents = _search(client, exp.experiment_id, "tags.`ctxbench.kind` = 'study'" + scope)
    plan, has_plan, plan_notes = plans.read(client, parents, PLAN_COLUMNS)
    studies = pd.DataFrame(
        [
            {
                "study": r.data.tags.get("study"),
                "run_id": r.info.run_id,
                "status": r.info.status,
                "start_time": r.info.start_time,
                "has_plan": has_plan.get(r.data.tags.get("study"), False),
            }
            for r in parents
        ],
        columns=["study", "run_id", "status", "start_time", "has_plan"],
    )

    frame = pd.DataFrame([_trial_row(r) for r in found])
    if frame.empty:
        return Runs(
            frame,
            empty,
            empty,
            studies,
            tracking_uri,
            experiment,
            exp.experiment_id,
            study,
            [f"no trials in experiment {experiment!r}" + (f", study {study!r}" if study else "")],
            plan=plan,
        )
    for key in TRIAL_TAGS:
        if key not in frame:
            frame[key] = None
    frame["study"] = frame["study"].fillna("adhoc")
    frame["failure_reason"] = frame["failure_reason"].fillna("")
    frame["agent"] = frame["agent"].fillna("")  # "" : ctxbench's own loop played
    # pandas drops NaN keys when grouping: a missing label must not make trials vanish.
    for key in ("strategy", "arm", "model", "task_family"):
        frame[key] = frame[key].fillna("unknown")
    frame[POINT] = _point(frame)
    frame["task_seed"] = _as_int(frame["task_seed"])
    frame["rep"] = _as_int(frame["rep"])
    for key in FINAL_METRICS:
        frame[key] = pd.to_numeric(frame[key], errors="coerce")

    finished = frame["mlflow_status"] == "FINISHED"
    excluded = frame.loc[~finished].assign(excluded_because=lambda d: "mlflow_status=" + d["mlflow_status"])
    kept = frame.loc[finished].sort_values("start_time")
    dup = kept.duplicated(list(IDENTITY), keep="last")
    excluded = pd.concat([excluded, kept.loc[dup].assign(excluded_because="duplicate (older run)")])
    trials = sort_cells(kept.loc[~dup].sort_values(list(PAIR_KEY)))
    trials["success"] = trials["success"].fillna(0).astype(int)

    plan["task_seed"], plan["rep"] = _as_int(plan["task_seed"]), _as_int(plan["rep"])
    plan[POINT] = plan[POINT].fillna("").astype(str)  # a plan written before points were recorded
    notes = plan_notes
    unpaired = trials["task_seed"].isna() | trials["rep"].isna()
    if unpaired.any():
        notes.append(f"{int(unpaired.sum())} trial(s) without task_seed/rep tags cannot be paired")
    if dup.any():
        notes.append(f"{int(dup.sum())} duplicate trial(s) superseded by a newer run of the same identity")
    return Runs(
        trials=trials,
        curves=_curves(client, trials) if curves else empty,
        excluded=excluded.reset_index(drop=True),
        studies=studies,
        tracking_uri=tracking_uri,
        experiment=experiment,
        experiment_id=exp.experiment_id,
        study=study,
        notes=notes,
        plan=plan,
    )
