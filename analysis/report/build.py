"""Regenerate the study report: ``python -m analysis.report [key=value ...]``.

Keys: tracking.uri, tracking.experiment, study (or study.name), report.dir,
report.reference (strategy, default raw), report.reference_arm (default baseline),
report.mlflow (log back to the study's parent run, default true), report.divergence
(outcome: locate the divergent turn only for outcome mismatches, the default; all: for
every pair vs baseline, which downloads every event log).

Writes <report.dir>/index.md, index.html (plots inlined), figures/*.png and
tables/*.csv, and logs the headline numbers and the report itself to the study's
MLflow parent run. Exit code 1, with a message, when there is nothing to analyse.
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

if TYPE_CHECKING:
    from analysis.analyse import Analysis
    from analysis.diff_report import Pages

# plots/analyse (matplotlib, scipy, statsmodels) load lazily: a missing database
# should be reported in a fraction of a second, not after the whole stack imports.

REPO = Path(__file__).resolve().parent.parent
KEYS = ("tracking.uri", "tracking.experiment", "study.name", "report.dir", "report.reference",
        "report.reference_arm", "report.mlflow", "report.divergence")
ALIASES = {"study": "study.name", "tracking_uri": "tracking.uri", "experiment": "tracking.experiment"}


def defaults(conf_dir: Path = REPO / "conf") -> dict[str, str | None]:
    out: dict[str, str | None] = {
        "tracking.uri": f"sqlite:///{REPO / 'results' / 'mlflow.db'}", "tracking.experiment": "ctxbench",
        "study.name": None, "report.dir": str(REPO / "results" / "report"), "report.reference": "raw",
        "report.reference_arm": "baseline", "report.mlflow": "true", "report.divergence": "outcome"}
    out.update(_from_hydra(conf_dir))
    return out


def _from_hydra(conf_dir: Path) -> dict[str, str]:
    """tracking.* (and the report dir under results_dir) from the project's Hydra config
    when it composes; {} otherwise.

    The report must keep working while that config changes under it, so any failure
    to compose or resolve falls back to the built-in defaults.
    """
    if not (conf_dir / "config.yaml").is_file():
        return {}
    try:
        from hydra import compose, initialize_config_dir
        from omegaconf import OmegaConf

        if not OmegaConf.has_resolver("ctxbench_root"):
            # Same meaning as the harness's resolver (the project root), which analysis
            # cannot import: paths in the config are rooted there, never at the cwd.
            OmegaConf.register_new_resolver("ctxbench_root", lambda: str(REPO))
        with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
            cfg = compose(config_name="config")
        found = {}
        for key in ("tracking.uri", "tracking.experiment", "results_dir"):
            value = OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)
            if isinstance(value, str) and value:
                found[key] = value
        if "results_dir" in found:
            found["report.dir"] = str(Path(found.pop("results_dir")) / "report")
    except Exception:
        return {}
    uri = found.get("tracking.uri", "")
    # A relative sqlite path in the project config means relative to the repo, not the cwd.
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        found["tracking.uri"] = f"sqlite:///{REPO / uri[len('sqlite:///'):]}"
    return found


def parse_overrides(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for arg in argv:
        key, sep, value = arg.lstrip("+").partition("=")
        key = ALIASES.get(key, key)
        if not sep or key not in KEYS:
            raise SystemExit(f"analysis.report: unknown argument {arg!r}; use key=value with key in "
                             f"{', '.join(KEYS)} (or study=NAME)")
        out[key] = value
    return out


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
        m[f"report.tree_mismatch.{r.strategy}.{r.arm}"] = r.tree_mismatch if r.tree_mismatch is not None else math.nan
    for r in a.attribution.itertuples():
        m[f"report.mismatch_vs_baseline.{r.strategy}.{r.arm}"] = r.mismatches / r.n_pairs if r.n_pairs else math.nan
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
    from analysis import labels

    t = a.runs.trials
    return {"report.basis": labels.basis(t)[:5000], "report.sample": labels.sample(t).label,
            "report.code_versions": ", ".join(labels.code_versions(t).index)[:5000]}


def log_to_parent(tracking_uri: str, run_id: str, metrics: dict[str, float], out_dir: Path,
                  tags: dict[str, str] | None = None) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    client = MlflowClient(tracking_uri=tracking_uri)
    now = int(time.time() * 1000)
    items = [Metric(k, v, now, 0) for k, v in metrics.items()]
    for start in range(0, len(items), 1000):  # log_batch's per-call metric limit
        client.log_batch(run_id, metrics=items[start:start + 1000])
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
    from analysis import labels, plots
    from analysis import render as R
    from analysis.document import document
    from analysis.sensitivity import section as sensitivity_section

    for sub in ("figures", "tables"):
        shutil.rmtree(out_dir / sub, ignore_errors=True)
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
    figs = {
        "success": plots.success(a.success),
        "tokens_per_turn": plots.tokens(a.runs.curves),
        "cache_hit_per_turn": plots.cache_hit(a.runs.curves),
        "cache_vs_consistency": plots.cache_vs_consistency(a.cache),
        "latency_per_turn": plots.latency(a.runs.curves),
        "cost_per_success": plots.cost_per_success(a.cost),
        "mismatch_attribution": plots.mismatch_attribution(a.attribution),
    }
    paths = {name: plots.save(fig, out_dir / "figures" / f"{name}.png") for name, fig in figs.items()}
    for name, frame in a.tables().items():
        frame.to_csv(out_dir / "tables" / f"{name}.csv", index=False)
    md = document(a, {k: p.relative_to(out_dir).as_posix() for k, p in paths.items()}, title, pages)
    md += sensitivity_section(a.runs.trials)  # "which conclusions survive": only a sensitivity study has one
    (out_dir / "index.md").write_text(md)
    (out_dir / "index.html").write_text(R.html(md, out_dir, title))
    # Every page of a selected study's report says so, sub-pages (diff pages) included.
    labels.stamp_pages(out_dir, labels.banner_html(labels.sample(a.runs.trials)))
    return paths


def generate(tracking_uri: str, experiment: str = "ctxbench", study: str | None = None,
             out_dir: Path | str = REPO / "results" / "report", *, reference: str = "raw",
             reference_arm: str = "baseline", log_mlflow: bool = True, runs: Runs | None = None,
             divergence: str = "outcome") -> Report | None:
    """Load, analyse, write the report; None when there are no FINISHED trials."""
    from analysis.analyse import analyse
    from analysis.diff_report import caching, write_pages
    from analysis.mismatch import mlflow_event_fetcher

    t0 = time.perf_counter()
    runs = runs or load_runs(tracking_uri, experiment, study)
    if runs.empty:
        return None
    t = runs.trials
    fetch = caching(mlflow_event_fetcher(runs.tracking_uri, dict(zip(t["run_id"], t["artifact_uri"], strict=True))))
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


def _no_runs_message(uri: str, experiment: str, study: str | None, runs: Runs | None, reason: str = "") -> str:
    where = f"experiment {experiment!r}" + (f", study {study!r}" if study else "") + f" at {uri}"
    msg = f"analysis.report: no finished ctxbench trials to analyse in {where}"
    notes = [reason] if reason else []
    if runs is not None:
        notes += runs.notes
        if not runs.excluded.empty:
            counts = runs.excluded["mlflow_status"].value_counts().to_dict()
            notes.append(f"only unfinished trials found: {counts}")
    msg += (" (" + "; ".join(notes) + ")." if notes else ".")
    return msg + " Run a study first (python -m bench -m experiment=grid) or pass tracking.uri=... / study=..."


def main(argv: list[str] | None = None) -> int:
    cfg = defaults()
    cfg.update(parse_overrides(sys.argv[1:] if argv is None else argv))

    def key(name: str, fallback: str) -> str:
        return cfg.get(name) or fallback

    uri, experiment, study = key("tracking.uri", ""), key("tracking.experiment", "ctxbench"), cfg["study.name"] or None
    runs = load_runs(uri, experiment, study)
    if runs.empty:
        print(_no_runs_message(uri, experiment, study, runs), file=sys.stderr)
        return 1
    rep = generate(uri, experiment, study, key("report.dir", str(REPO / "results" / "report")),
                   reference=key("report.reference", "raw"), reference_arm=key("report.reference_arm", "baseline"),
                   log_mlflow=key("report.mlflow", "true").lower() not in ("0", "false", "no"), runs=runs,
                   divergence=key("report.divergence", "outcome"))
    assert rep is not None
    t = rep.analysis.runs.trials
    print(f"analysis.report: {len(t)} trials ({t['strategy'].nunique()} strategies × {t['arm'].nunique()} arms), "
          f"{len(rep.analysis.runs.excluded)} excluded, "
          f"{len(rep.pages.mismatch) + len(rep.pages.reps) if rep.pages else 0} diff pages "
          f"-> {rep.out_dir / 'index.html'} "
          f"in {rep.seconds:.1f}s" + (f"; logged to parent run {rep.logged_to}" if rep.logged_to else
                                      "; not logged to MLflow (no single study parent run; pass study=NAME)"
                                      if t["study"].nunique() > 1 or rep.analysis.runs.studies.empty else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
