"""Diff pages for the report: every mismatch against its baseline twin, every pair of
consecutive reps of a cell whose final trees differ, written beside the report and (mismatches) logged to the trial's
own MLflow run as ``diff/vs_baseline.html`` so it opens from that run's Artifacts tab.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from analysis.diff.html import write_page
from analysis.diff.mismatch import EventFetcher
from analysis.diff.trajectory import Trajectory, compare
from analysis.load import CELL, TASK_KEY
from ctxlog.reader import Log

if TYPE_CHECKING:
    from analysis.report.analyse import Analysis

ARTIFACT = "diff/vs_baseline.html"
# A grid study can have hundreds of mismatches; pages past this many are not written
# (the report says so) so that the report directory and its MLflow mirror stay small.
MAX_PAGES = 200
_META = (
    "study",
    "strategy",
    "arm",
    "task_family",
    "task_seed",
    "rep",
    "model",
    "status",
    "failure_reason",
    "final_tree_sha",
    "success",
    "steps_passed",
    "run_id",
    "run_name",
    "study.sample",
    "study.sample_note",
)


@dataclass
class Pages:
    """Pages written, as paths relative to the report directory."""

    mismatch: dict[str, str] = field(default_factory=dict)  # run id -> page vs its baseline twin
    reps: dict[tuple[str, str], str] = field(default_factory=dict)  # (run id, other rep's run id) -> page
    logged: int = 0
    notes: list[str] = field(default_factory=list)


def caching(fetch: EventFetcher) -> EventFetcher:
    """The same fetcher, each run's log downloaded once (the analysis fetched the mismatch
    pairs already; their pages reuse those logs)."""
    cache: dict[str, Log | None] = {}
    lock = threading.Lock()

    def get(run_id: str) -> Log | None:
        with lock:
            if run_id in cache:
                return cache[run_id]
        events = fetch(run_id)
        with lock:
            cache[run_id] = events
        return events

    return get


def _trajectory(row: pd.Series, log: Log) -> Trajectory:
    meta = {k: row[k] for k in _META if k in row and not (isinstance(row[k], float) and pd.isna(row[k]))}
    return Trajectory(str(row.get("run_name") or row["run_id"]), log, meta)


def rep_pairs(trials: pd.DataFrame) -> list[tuple[str, str]]:
    """(run, run of the next rep) for reps of one cell and task whose final trees differ."""
    out = []
    keyed = trials.loc[trials["final_tree_sha"].fillna("") != ""].sort_values("rep")
    for _, group in keyed.groupby([*CELL, *TASK_KEY]):
        rows = list(group.itertuples())
        for x, y in zip(rows, rows[1:], strict=False):
            if x.final_tree_sha != y.final_tree_sha:
                out.append((x.run_id, y.run_id))
    return out


def write_pages(a: Analysis, out_dir: Path, fetch: EventFetcher, log_mlflow: bool = False) -> Pages:
    pages = Pages()
    by_id = a.runs.trials.set_index("run_id", drop=False)
    across = a.across
    todo = (
        [("mismatch", r.run_id, r.run_id_ref) for r in across.loc[across["outcome_differs"]].itertuples()]
        if not across.empty
        else []
    )
    todo += [("rep", x, y) for x, y in rep_pairs(a.runs.trials)]
    if len(todo) > MAX_PAGES:
        pages.notes.append(
            f"{len(todo) - MAX_PAGES} of {len(todo)} diff pages not written (limit {MAX_PAGES})"
        )
        todo = todo[:MAX_PAGES]
    target = out_dir / "diff"
    for old in target.glob("*.html") if target.is_dir() else ():
        old.unlink()
    client = None
    for kind, run_a, run_b in todo:
        ea, eb = fetch(run_a), fetch(run_b)
        if ea is None or eb is None:
            pages.notes.append(f"no diff page for {run_a} vs {run_b}: an event log is missing")
            continue
        d = compare(
            _trajectory(by_id.loc[run_a], ea),
            _trajectory(by_id.loc[run_b], eb),
            "baseline" if kind == "mismatch" else "rep",
        )
        name = f"{run_a}.html" if kind == "mismatch" else f"{run_a}_vs_{run_b}.html"
        path = write_page(d, target / name)
        rel = path.relative_to(out_dir).as_posix()
        if kind == "rep":
            pages.reps[(run_a, run_b)] = rel
            continue
        pages.mismatch[run_a] = rel
        if log_mlflow:
            try:
                client = client or _client(a.runs.tracking_uri)
                with tempfile.TemporaryDirectory() as tmp:
                    copy = Path(tmp) / Path(ARTIFACT).name
                    copy.write_bytes(path.read_bytes())
                    client.log_artifact(run_a, str(copy), artifact_path=str(Path(ARTIFACT).parent))
                client.set_tag(run_a, "ctxbench.diff", ARTIFACT)
                pages.logged += 1
            except Exception as exc:  # the page on disk is the result; MLflow is a mirror
                print(f"analysis.report: could not log {ARTIFACT} to run {run_a}: {exc}", file=sys.stderr)
    return pages


def _client(uri: str):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)
