"""The report's files and their MLflow mirror: `generate` loads, analyses, writes the diff
pages, the figures, the tables and the text (analysis.report.document), and logs the headline
numbers and the report to the study's parent run. The command is `python -m analysis.report`.
"""

from __future__ import annotations

import math
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.load import Runs, load_runs
from analysis.settings import REPO

if TYPE_CHECKING:
    from analysis.report.analyse import Analysis
    from analysis.report.pages import Pages

# plots/analyse (matplotlib, scipy, statsmodels) load lazily: a missing database
# should be reported in a fraction of a second, not after the whole stack imports.


def headline_metrics(a: Analysis) -> dict[str, float]:
    """Numbers worth seeing beside the trials in the MLflow UI (keys: report.*)."""
    m: dict[str, float] = {"report.n_trials": len(a.runs.trials), "report.n_excluded": len(a.runs.excluded)}
    for r in a.success.itertuples():
        m[f"report.success.{r.strategy}.{r.arm}"] = r.rate
        m[f"report.success_n.{r.strategy}.{r.arm}"] = r.n
    for r in a.vs_reference.itertuples():
        tag = f"{r.strategy}_vs_{r.reference}.{r.arm}"
        m[f"report.success_diff.{tag}"] = r.diff
        m[f"report.success_p_holm.{tag}"] = r.p_holm
        m[f"report.success_power.{tag}"] = r.power
        m[f"report.success_mde.{tag}"] = r.mde
    for r in a.continuous.itertuples():
        m[f"report.{r.measure}_diff.{r.strategy}_vs_{r.reference}.{r.arm}"] = r.diff
    for r in a.within.itertuples():
        m[f"report.tree_mismatch.{r.strategy}.{r.arm}"] = (
            r.tree_mismatch if r.tree_mismatch is not None else math.nan
        )
    for r in a.attribution.itertuples():
        m[f"report.mismatch_vs_baseline.{r.strategy}.{r.arm}"] = (
            r.mismatches / r.n_pairs if r.n_pairs else math.nan
        )
    m["report.interaction_perm_p"] = a.interaction_result.get("perm_p", math.nan)
    m["report.interaction_glm_p"] = a.interaction_result.get("glm_p", math.nan)
    clean = {}
    for k, v in m.items():
        if v is not None and math.isfinite(float(v)):
            clean[re.sub(r"[^\w.\-/ ]", "_", k)] = float(v)
    return clean


def headline_tags(a: Analysis) -> dict[str, str]:
    """What the headline metrics rest on, beside them on the parent run (MLflow metrics are
    numbers; their basis is text): n, seeds, reps, model, code version, how seeds were chosen."""
    from analysis.load import labels

    t = a.runs.trials
    return {
        "report.basis": labels.basis(t)[:5000],
        "report.sample": labels.sample(t).label,
        "report.code_versions": ", ".join(labels.code_versions(t).index)[:5000],
    }


def log_to_parent(
    tracking_uri: str,
    run_id: str,
    metrics: dict[str, float],
    out_dir: Path,
    tags: dict[str, str] | None = None,
) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(tracking_uri=tracking_uri)
    now = int(time.time() * 1000)
    items = [Metric(k, v, now, 0) for k, v in metrics.items()]
    for start in range(0, len(items), 1000):  # log_batch's per-call metric limit
        client.log_batch(run_id, metrics=items[start : start + 1000])
    client.log_artifacts(run_id, str(out_dir), artifact_path="report")
    client.set_tag(run_id, "ctxbench.report", "report/index.html")
    for key, value in (tags or {}).items():
        client.set_tag(run_id, key, value)


@dataclass
class Report:
    analysis: Analysis
    out_dir: Path
    figures: dict[str, Path]
    logged_to: str | None
    seconds: float
    pages: Pages | None = None


def write(a: Analysis, out_dir: Path, title: str, pages: Pages | None = None) -> dict[str, Path]:
    from analysis import render
    from analysis.load import labels
    from analysis.report import plots
    from analysis.report.document import document

    for sub in ("figures", "tables"):
        shutil.rmtree(out_dir / sub, ignore_errors=True)
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
    figs = {
        "success": plots.success(a.success, a.level),
        "tokens_per_turn": plots.tokens(a.runs.curves, a.level),
        "cache_hit_per_turn": plots.cache_hit(a.runs.curves, a.level),
        "cache_vs_consistency": plots.cache_vs_consistency(a.cache, a.level),
        "latency_per_turn": plots.latency(a.runs.curves, a.level),
        "cost_per_success": plots.cost_per_success(a.cost, a.level),
        "mismatch_attribution": plots.mismatch_attribution(a.attribution, a.level),
    }
    paths = {name: plots.save(fig, out_dir / "figures" / f"{name}.png") for name, fig in figs.items()}
    for name, frame in a.tables().items():
        frame.to_csv(out_dir / "tables" / f"{name}.csv", index=False)
    md = document(a, {k: p.relative_to(out_dir).as_posix() for k, p in paths.items()}, title, pages)
    (out_dir / "index.md").write_text(md)
    (out_dir / "index.html").write_text(render.html(md, out_dir, title))
    # Every page of a selected study's report says so, sub-pages (diff pages) included.
    labels.stamp_pages(out_dir, labels.banner_html(labels.sample(a.runs.trials)))
    return paths


def generate(
    tracking_uri: str,
    experiment: str = "ctxbench",
    study: str | None = None,
    out_dir: Path | str = REPO / "results" / "report",
    *,
    reference: str = "raw",
    reference_arm: str = "baseline",
    log_mlflow: bool = True,
    runs: Runs | None = None,
    divergence: str = "outcome",
) -> Report | None:
    """Load, analyse, write the report; None when there are no FINISHED trials."""
    from analysis.diff.mismatch import mlflow_event_fetcher
    from analysis.report.analyse import analyse
    from analysis.report.pages import caching, write_pages

    t0 = time.perf_counter()
    runs = runs or load_runs(tracking_uri, experiment, study)
    if runs.empty:
        return None
    t = runs.trials
    fetch = caching(
        mlflow_event_fetcher(runs.tracking_uri, dict(zip(t["run_id"], t["artifact_uri"], strict=True)))
    )
    a = analyse(runs, reference=reference, reference_arm=reference_arm, divergence=divergence, fetch=fetch)
    out_dir = Path(out_dir)
    names = sorted(runs.trials["study"].unique())
    label = study or (names[0] if len(names) == 1 else None)
    title = f"ctxbench report — study {label}" if label else f"ctxbench report — {len(names)} studies"
    pages = write_pages(a, out_dir, fetch, log_mlflow=log_mlflow)
    paths = write(a, out_dir, title, pages)
    logged = None
    parents = runs.studies[runs.studies["study"] == label] if label else runs.studies.iloc[0:0]
    if log_mlflow and not parents.empty:
        logged = str(parents.sort_values("start_time")["run_id"].iloc[-1])
        try:
            log_to_parent(tracking_uri, logged, headline_metrics(a), out_dir, headline_tags(a))
        except Exception as exc:  # the files on disk are the report; MLflow is a mirror
            print(f"analysis.report: could not log to parent run {logged}: {exc}", file=sys.stderr)
            logged = None
    return Report(a, out_dir, paths, logged, time.perf_counter() - t0, pages)
