"""A study's records in MLflow: its parent run, created (or reopened, on resume) at multirun
start with the study's config, sweep, code version and plan (`plan.json`: every trial any
invocation planned, by config hash) and closed at the end with the outcome counts; and the
per-status counts of its trial runs against the plan (`python -m bench.study status`).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("ctxbench.study")

PLAN = "plan.json"  # the study's planned trials, in its parent run (hashed by bench.study.plan)
# The identity of a planned trial, spelled as its MLflow tags (bench/tracking/runs.py TrialRun).
IDENTITY = ("strategy", "arm", "task_family", "task_seed", "rep", "model")

# Outcome of one job, as recorded in progress.jsonl (written by bench.study.callback).
OUTCOMES = ("success", "failure", "error", "killed", "skipped", "running_elsewhere", "crashed")


def _study_config(config: DictConfig, jobs: list[list[str]] | None) -> dict[str, Any]:
    base = OmegaConf.to_container(config, resolve=False)
    assert isinstance(base, dict)
    hydra = base.pop("hydra", {}) or {}
    with contextlib.suppress(Exception):
        resolved = {
            k: OmegaConf.to_container(config[k], resolve=True)
            if OmegaConf.is_config(config[k])
            else config[k]
            for k in base
        }
        base = resolved
    launcher = dict(hydra.get("launcher") or {})
    return {
        "study": base.get("study"),
        "base_config": base,
        "sweep": {
            "params": dict((hydra.get("sweeper") or {}).get("params") or {}),
            "overrides": list((hydra.get("overrides") or {}).get("task") or []),
            "launcher": launcher.get("_target_"),
            "launcher_config": launcher,
            "n_trials": len(jobs) if jobs is not None else None,
        },
    }


def _tracking(config: DictConfig) -> tuple[Any, str, Path]:
    from bench.tracking.runs import _client, experiment_id

    uri = str(config.tracking.uri)
    client = _client(uri)
    exp = experiment_id(
        client, str(config.tracking.experiment), str(config.tracking.get("artifact_root") or "")
    )
    return client, exp, Path(str(config.results_dir))


def open_study_run(
    config: DictConfig,
    study: str,
    jobs: list[list[str]] | None,
    plan_entries: list[dict[str, Any]] | None = None,
) -> str:
    """Find or create the study's parent run; record this invocation (config, code version)
    and merge its planned trials into the study's `plan.json` (tag `n_trials`: the plan's size)."""
    import subprocess
    import sys

    from bench.config import ROOT, study_sample
    from bench.tracking.runs import code_version, study_run_id

    client, exp, results_dir = _tracking(config)
    conf = _study_config(config, jobs)
    run_id = study_run_id(client, exp, study, results_dir, conf)
    version = code_version()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    client.set_tag(run_id, "git_sha", version)
    for key, value in study_sample(config.study).items():  # how the seeds were chosen (report banner)
        client.set_tag(run_id, key, value)
    client.set_tag(run_id, "launcher", str(conf["sweep"]["launcher"]))
    invocation = {
        **conf,
        "code_version": version,
        "argv": sys.argv,
        "host": os.uname().nodename,
        "pid": os.getpid(),
        "started_utc": stamp,
    }
    if plan_entries is not None:
        invocation["plan"] = record_plan(
            client,
            run_id,
            study,
            results_dir,
            plan_entries,
            {
                "started_utc": stamp,
                "argv": sys.argv[1:],
                "code_version": version,
                "overrides": conf["sweep"]["overrides"],
            },
        )
    else:
        client.set_tag(run_id, "n_trials", str(conf["sweep"]["n_trials"]))
    client.log_dict(run_id, invocation, f"invocations/{stamp}.yaml")
    if version.endswith("-dirty"):  # the uncommitted part of the code version, to reproduce it
        with contextlib.suppress(Exception):
            diff = subprocess.run(
                ["git", "-C", str(ROOT), "diff", "HEAD"], capture_output=True, text=True, timeout=30
            ).stdout
            client.log_text(run_id, diff, f"invocations/{stamp}.code.diff")
    if client.get_run(run_id).info.status != "RUNNING":
        client.update_run(run_id, status="RUNNING")
    return run_id


def read_plan(client: Any, run_id: str) -> dict[str, Any] | None:
    """The study's plan.json, or None (a study begun before plans were recorded)."""
    if PLAN not in {a.path for a in client.list_artifacts(run_id)}:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        return json.loads(Path(client.download_artifacts(run_id, PLAN, tmp)).read_text())


def record_plan(
    client: Any,
    run_id: str,
    study: str,
    lock_dir: Path,
    entries: list[dict[str, Any]],
    invocation: dict[str, Any],
) -> dict[str, int]:
    """Merge this invocation's planned trials into the study's plan (bench.study.plan.merge)
    under a lock, so two invocations of one study on this host never lose each other's."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(lock_dir / ".plan.lock"):
        plan, numbers = merge(read_plan(client, run_id), study, invocation, entries)
        client.log_dict(run_id, plan, PLAN)
    client.set_tag(run_id, "n_trials", str(numbers["plan_size"]))
    client.set_tag(run_id, "plan_invocations", str(len(plan["invocations"])))
    if numbers["new"] and numbers["already_planned"] or numbers["earlier_only"]:
        log.warning(
            "[study %s] a sweep unlike the study's earlier ones: it plans %d trial(s), %d new to the "
            "study's plan, %d already in it; %d planned earlier are not in it. The plan is now their "
            "union, %d trials, each counted in the report (a new design wants its own study.name)",
            study,
            numbers["trials"],
            numbers["new"],
            numbers["already_planned"],
            numbers["earlier_only"],
            numbers["plan_size"],
        )
    return numbers


def merge(
    plan: dict[str, Any] | None, study: str, invocation: dict[str, Any], entries: Sequence[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, int]]:
    """The study's plan after this invocation: the union, by config hash, of every
    invocation's trials, each trial naming the invocations that planned it. A resume with
    the same sweep adds nothing; a different sweep adds its new trials and leaves the earlier
    ones planned (they were promised; if never run, the report counts them missing). Returns
    the plan and this invocation's numbers (jobs, new, already planned, earlier-only, invalid)."""
    plan = (
        copy.deepcopy(plan)
        if plan
        else {"format": 1, "study": study, "invocations": [], "trials": [], "invalid": []}
    )
    index = len(plan["invocations"])
    by_hash = {t["config_hash"]: t for t in plan["trials"]}
    mine: set[str] = set()
    new = invalid = 0
    for e in entries:
        h = e.get("config_hash")
        if not h:
            invalid += 1
            plan["invalid"].append(
                {"overrides": e["overrides"], "error": e.get("error", ""), "invocation": index}
            )
            continue
        if h in mine:  # two jobs of one sweep, one trial (they differ only where results go)
            continue
        mine.add(h)
        if h in by_hash:
            by_hash[h]["invocations"].append(index)
        else:
            new += 1
            trial = {
                "config_hash": h,
                **{k: e[k] for k in IDENTITY},
                "sensitivity_point": e.get("sensitivity_point", ""),  # analysis/load/runs.py POINT
                "overrides": e["overrides"],
                "invocations": [index],
            }
            by_hash[h] = trial
            plan["trials"].append(trial)
    numbers = {
        "jobs": len(entries),
        "trials": len(mine),
        "new": new,
        "already_planned": len(mine) - new,
        "earlier_only": len(by_hash) - len(mine),
        "invalid": invalid,
        "plan_size": len(by_hash),
    }
    plan["invocations"].append({**invocation, **numbers})
    return plan, numbers


def close_study_run(config: DictConfig, run_id: str, summary: Mapping[str, Any], failed: bool) -> None:
    from mlflow.entities import Metric

    client, _, _ = _tracking(config)
    now = int(time.time() * 1000)
    c = summary["counts"]
    metrics = {
        "trials_planned": summary["total"] or 0,
        "trials_done": summary["done"],
        "trials_executed": summary["executed"],
        "study_wall_s": summary["elapsed_s"],
        **{f"trials_{k}": float(c.get(k, 0)) for k in OUTCOMES},
    }
    client.log_batch(run_id, metrics=[Metric(k, float(v), now, 0) for k, v in metrics.items()])
    client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")


def status(study: str, uri: str, experiment: str = "ctxbench") -> dict[str, Any]:
    """Per-status counts of a study's trial runs, config hashes with more than one FINISHED run
    (which must never happen), and the plan: planned trials finished, excluded (only runs
    without a verdict) or missing (no run), and FINISHED trials the plan does not name."""
    from bench.tracking.runs import _client

    client = _client(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return {"runs": 0, "by_status": {}, "finished_hashes": 0, "double_counted": [], "plan": None}
    runs = client.search_runs(
        [exp.experiment_id],
        filter_string=(f"tags.study = '{study}' and tags.`ctxbench.kind` = 'trial'"),
        max_results=50000,
    )
    by_status = Counter(r.info.status for r in runs)
    finished = Counter(r.data.tags.get("config_hash") for r in runs if r.info.status == "FINISHED")
    ran = {r.data.tags.get("config_hash") for r in runs}
    parents = client.search_runs(
        [exp.experiment_id],
        filter_string=(f"tags.study = '{study}' and tags.`ctxbench.kind` = 'study'"),
        max_results=1,
    )
    plan = read_plan(client, parents[0].info.run_id) if parents else None
    counts = None
    if plan is not None:
        planned = {t["config_hash"] for t in plan["trials"]}
        counts = {
            "planned": len(planned),
            "finished": len(planned & set(finished)),
            "excluded": len((planned & ran) - set(finished)),
            "missing": len(planned - ran),
            "unplanned_finished": len(set(finished) - planned),
            "invalid_jobs": len(plan["invalid"]),
            "invocations": len(plan["invocations"]),
        }
    return {
        "runs": len(runs),
        "by_status": dict(by_status),
        "finished_hashes": len(finished),
        "double_counted": sorted(h for h, n in finished.items() if n > 1),
        "plan": counts,
    }
