"""A study's records in MLflow: its parent run, created (or reopened, on resume) at multirun
start with the study's config, sweep and code version and closed at the end with the outcome
counts; and the per-status counts of its trial runs (`python -m bench.study status`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

# Outcome of one job, as recorded in progress.jsonl (written by bench.study.callback).
OUTCOMES = ("success", "failure", "error", "killed", "skipped", "running_elsewhere", "crashed")


def _study_config(config: DictConfig, jobs: list[list[str]] | None) -> dict[str, Any]:
    base = OmegaConf.to_container(config, resolve=False)
    assert isinstance(base, dict)
    hydra = base.pop("hydra", {}) or {}
    with contextlib.suppress(Exception):
        resolved = {k: OmegaConf.to_container(config[k], resolve=True) if OmegaConf.is_config(config[k])
                    else config[k] for k in base}
        base = resolved
    launcher = dict(hydra.get("launcher") or {})
    return {"study": base.get("study"), "base_config": base,
            "sweep": {"params": dict((hydra.get("sweeper") or {}).get("params") or {}),
                      "overrides": list((hydra.get("overrides") or {}).get("task") or []),
                      "launcher": launcher.get("_target_"), "launcher_config": launcher,
                      "n_trials": len(jobs) if jobs is not None else None}}


def _tracking(config: DictConfig) -> tuple[Any, str, Path]:
    from bench.tracking.runs import _client, experiment_id

    uri = str(config.tracking.uri)
    client = _client(uri)
    exp = experiment_id(client, str(config.tracking.experiment), str(config.tracking.get("artifact_root") or ""))
    return client, exp, Path(str(config.results_dir))


def open_study_run(config: DictConfig, jobs: list[list[str]] | None) -> str:
    """Find or create the study's parent run; record this invocation (config, code version)."""
    import subprocess
    import sys

    from bench.config import ROOT, study_sample
    from bench.tracking.runs import code_version, study_run_id

    client, exp, results_dir = _tracking(config)
    study = str(config.study.name)
    conf = _study_config(config, jobs)
    run_id = study_run_id(client, exp, study, results_dir, conf)
    version = code_version()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    client.set_tag(run_id, "git_sha", version)
    for key, value in study_sample(config.study).items():  # how the seeds were chosen (report banner)
        client.set_tag(run_id, key, value)
    client.set_tag(run_id, "n_trials", str(conf["sweep"]["n_trials"]))
    client.set_tag(run_id, "launcher", str(conf["sweep"]["launcher"]))
    client.log_dict(run_id, {**conf, "code_version": version, "argv": sys.argv, "host": os.uname().nodename,
                             "pid": os.getpid(), "started_utc": stamp}, f"invocations/{stamp}.yaml")
    if version.endswith("-dirty"):  # the uncommitted part of the code version, to reproduce it
        with contextlib.suppress(Exception):
            diff = subprocess.run(["git", "-C", str(ROOT), "diff", "HEAD"], capture_output=True, text=True,
                                  timeout=30).stdout
            client.log_text(run_id, diff, f"invocations/{stamp}.code.diff")
    if client.get_run(run_id).info.status != "RUNNING":
        client.update_run(run_id, status="RUNNING")
    return run_id


def close_study_run(config: DictConfig, run_id: str, summary: Mapping[str, Any], failed: bool) -> None:
    from mlflow.entities import Metric

    client, _, _ = _tracking(config)
    now = int(time.time() * 1000)
    c = summary["counts"]
    metrics = {"trials_planned": summary["total"] or 0, "trials_done": summary["done"],
               "trials_executed": summary["executed"], "study_wall_s": summary["elapsed_s"],
               **{f"trials_{k}": float(c.get(k, 0)) for k in OUTCOMES}}
    client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()])
    client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")


def status(study: str, uri: str, experiment: str = "ctxbench") -> dict[str, Any]:
    """Per-status counts of a study's trial runs, and config hashes with more than one
    FINISHED run (which must never happen)."""
    from bench.tracking.runs import _client

    client = _client(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return {"runs": 0, "by_status": {}, "finished_hashes": 0, "double_counted": []}
    runs = client.search_runs([exp.experiment_id], filter_string=(
        f"tags.study = '{study}' and tags.`ctxbench.kind` = 'trial'"), max_results=50000)
    by_status = Counter(r.info.status for r in runs)
    finished = Counter(r.data.tags.get("config_hash") for r in runs if r.info.status == "FINISHED")
    return {"runs": len(runs), "by_status": dict(by_status), "finished_hashes": len(finished),
            "double_counted": sorted(h for h, n in finished.items() if n > 1)}
