"""MLflow logging: one run per trial, grouped under a study parent run, everything batched.

This MLflow refuses the file store; the URI is a database (sqlite by default). `import
mlflow` costs ~2 s, so it happens once per process, lazily.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from filelock import FileLock

from bench.config import TrialConfig
from bench.core import procs, redact
from bench.core.identity import model_identity

MAX_PARAM_CHARS = 500  # MLflow's limit on a param value
BATCH = 900  # MLflow's log_batch takes at most 1000 metrics


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The harness's git commit, with `-dirty` when the working tree differs from it: asked once
    per process, as the code a process runs is the code it imported (two git processes, ~15 ms,
    were paid per trial)."""
    import subprocess

    from bench.config import ROOT

    try:
        sha = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (sha or "unknown") + ("-dirty" if dirty else "")


def _client(uri: str):
    """The MLflow client every harness write goes through: it retries while a shared SQLite
    store is locked by another worker (bench.tracking.retry)."""
    from bench.tracking.retry import client

    return client(uri)


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = str(v)[:MAX_PARAM_CHARS]
    return out


_EXPERIMENTS: dict[tuple[str, str], str] = {}  # (store, name): the experiment's id, once it exists


def known_experiment(client, name: str) -> str | None:
    """The id of the experiment `name`, or None where there is none yet. An experiment's id
    never changes (deleting one keeps its name and id: MLflow refuses runs in it, either way),
    so one found is remembered for the process: each trial asked the store twice."""
    store = str(getattr(client, "tracking_uri", ""))
    if (store, name) in _EXPERIMENTS:
        return _EXPERIMENTS[store, name]
    exp = client.get_experiment_by_name(name)
    return None if exp is None else _remember(store, name, exp.experiment_id)


def _remember(store: str, name: str, exp_id: str) -> str:
    if store:  # a store with no address cannot be told from another
        _EXPERIMENTS[store, name] = exp_id
    return exp_id


def experiment_id(client, name: str, artifact_root: str) -> str:
    found = known_experiment(client, name)
    if found is not None:
        return found
    try:
        location = Path(artifact_root).resolve().as_uri() if artifact_root else None
        made = client.create_experiment(name, artifact_location=location)
    except Exception:  # another process created it first
        found = known_experiment(client, name)
        if found is None:
            raise
        return found
    return _remember(str(getattr(client, "tracking_uri", "")), name, made)


_PARENTS: dict[tuple[str, str, str], str] = {}  # (store, experiment, study): the parent run's id


def study_run_id(
    client,
    exp_id: str,
    study: str,
    lock_dir: Path,
    config: Mapping | None = None,
    tags: Mapping[str, str] | None = None,
    *,
    single: bool = False,
) -> str:
    """Find or create the study's parent run; a file lock keeps parallel workers from racing.
    `single`: a trial outside a multirun (no study callback will end the parent): a parent it
    creates is ended at once, not left RUNNING for ever (issue 21).

    A parent found or made is remembered for the process (`_PARENTS`): a study's parent run is
    never replaced, so each trial of a worker asked the store the same question again (a tag
    search under a file lock, ~2 % of a worker's CPU in the sim grid)."""
    memo = (str(getattr(client, "tracking_uri", "")), exp_id, study)
    if memo in _PARENTS:
        return _PARENTS[memo]
    lock_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(lock_dir / ".study.lock"):
        found = client.search_runs(
            [exp_id],
            filter_string=f"tags.`ctxbench.kind` = 'study' and tags.study = '{study}'",
            max_results=1,
        )
        if found:
            _PARENTS[memo] = found[0].info.run_id
            return found[0].info.run_id
        run = client.create_run(
            exp_id, run_name=f"study·{study}", tags={"ctxbench.kind": "study", "study": study, **(tags or {})}
        )
        if config:
            client.log_dict(run.info.run_id, dict(config), "study_config.yaml")
        if single:
            client.set_terminated(run.info.run_id, status="FINISHED")
        _PARENTS[memo] = run.info.run_id
        return run.info.run_id


CLAIMS_PER_PROCESS = 4  # claims in progress at once in one process (threads): its MLflow store's pool is 15
_CLAIMING = threading.BoundedSemaphore(CLAIMS_PER_PROCESS)
STALE_GRACE_S = 600.0  # a RUNNING run older than its trial timeout + this is dead (the watchdog ends trials)


@contextlib.contextmanager
def trial_claim(lock_dir: Path, config_hash: str) -> Iterator[None]:
    """Held while a trial checks for earlier runs of its config and creates its own, so two
    processes or threads on this host (two invocations of one study) never both start the same
    config hash. One lock per config hash: trials of different configs never wait for each
    other's MLflow calls (one host-wide lock made 128 trials in flight start one by one).
    Within a process at most CLAIMS_PER_PROCESS claim at once: 128 threads claiming together
    waited past the 30 s timeout of the process's MLflow connection pool (15 connections)."""
    claims = lock_dir / ".claims"
    claims.mkdir(parents=True, exist_ok=True)
    # Never unlinked: removing a lock file another process has open would give a third a new
    # file, and two holders. An empty file per config the study ran costs an inode.
    with _CLAIMING, FileLock(claims / f"{config_hash}.lock"):
        yield


def previous_runs(cfg: TrialConfig) -> list:
    """Runs of this study with this config hash. RUNNING ones whose process is gone (killed
    with SIGKILL, machine rebooted) are marked KILLED first, so they are rerun, not counted.
    Gone means: the pid is dead on this host, or (any host) the run started longer ago than the
    trial timeout plus STALE_GRACE_S, which no live trial can (the watchdog ends it)."""
    client = _client(cfg.tracking.uri)
    exp = known_experiment(client, cfg.tracking.experiment)
    if exp is None:
        return []
    runs = client.search_runs(
        [exp],
        filter_string=(
            f"tags.config_hash = '{cfg.config_hash}' and tags.study = '{cfg.study}' "
            "and tags.`ctxbench.kind` = 'trial'"
        ),
    )
    host = os.uname().nodename
    stale_ms = (time.time() - cfg.limits.trial_timeout_s - STALE_GRACE_S) * 1000
    marked = False
    for r in runs:
        tags = r.data.tags
        dead = (
            tags.get("host") == host and not procs.alive(int(tags.get("pid", "0") or 0), _ticks(tags))
        ) or (r.info.start_time or 0) < stale_ms
        if r.info.status == "RUNNING" and dead:
            client.set_tag(r.info.run_id, "status", "killed")
            client.set_tag(r.info.run_id, "failure_reason", "interrupted")
            client.set_terminated(r.info.run_id, status="KILLED")
            marked = True
    if not marked:
        return runs
    return client.search_runs(
        [exp],
        filter_string=(
            f"tags.config_hash = '{cfg.config_hash}' and tags.study = '{cfg.study}' "
            "and tags.`ctxbench.kind` = 'trial'"
        ),
    )


class TrialRun:
    """The MLflow run of one trial. Created RUNNING; ends FINISHED only with a verdict."""

    def __init__(self, cfg: TrialConfig, extra_tags: Mapping[str, str], *, params: bool = True):
        """`params=False`: the caller logs them with `log_params()`, outside the host-wide claim
        lock (runner.claim), which only the check and the run's creation need."""
        self.cfg = cfg
        self.client = _client(cfg.tracking.uri)
        exp = experiment_id(self.client, cfg.tracking.experiment, cfg.tracking.artifact_root)
        tags = {
            "ctxbench.kind": "trial",
            "study": cfg.study,
            "strategy": cfg.level,
            "arm": cfg.arm.name,
            "task_family": cfg.task.family,
            "task_seed": str(cfg.task.seed),
            "rep": str(cfg.rep),
            "model": model_identity(cfg.model),
            "model_name": str(cfg.model.get("name", "")),
            "model_id": str(cfg.model.get("model_id") or ""),
            "model_endpoint": str(cfg.model.get("base_url") or ""),
            "status": "running",
            "failure_reason": "",
            "config_hash": cfg.config_hash,
            "git_sha": code_version(),
            "pid": str(os.getpid()),
            "pid_start": str(procs.start_ticks(os.getpid()) or ""),
            "host": os.uname().nodename,
            **(cfg.sample or {}),
            **extra_tags,
        }
        if cfg.level != cfg.strategy["name"]:  # an agent plays: its own context policy is the level
            tags["agent"] = cfg.level
        if cfg.study != "adhoc":
            tags["mlflow.parentRunId"] = study_run_id(
                self.client, exp, cfg.study, cfg.results_dir, None, cfg.sample, single=True
            )
        run = self.client.create_run(exp, run_name=cfg.run_name, tags=tags)
        self.run_id = run.info.run_id
        self.artifact_uri = run.info.artifact_uri
        if params:
            self.log_params()

    def log_params(self) -> None:
        from mlflow.entities import Param

        params = [Param(k, v) for k, v in sorted(redact.scrub(flatten(self.cfg.resolved)).items())]
        for i in range(0, len(params), 100):
            self.client.log_batch(self.run_id, params=params[i : i + 100])

    def finish(
        self,
        status: str,
        tags: Mapping[str, str],
        final: Mapping[str, float],
        per_turn: list[dict[str, float]],
        artifacts: Path | None,
    ) -> None:
        """`status` is the MLflow status: FINISHED (a verdict), FAILED (crash) or KILLED."""
        from mlflow.entities import Metric, RunTag

        now = int(time.time() * 1000)
        metrics = [Metric(k, float(v), now, 0) for k, v in final.items()]
        for turn, row in enumerate(per_turn):
            metrics += [Metric(k, float(v), now, turn) for k, v in row.items()]
        # The end tags ride in the last batch of metrics: one store call less a trial, and MLflow
        # still writes them after that batch's metrics, so a run tagged with its verdict has
        # all its metrics.
        chunks = [metrics[i : i + BATCH] for i in range(0, len(metrics), BATCH)] or [[]]
        for chunk in chunks[:-1]:
            self.client.log_batch(self.run_id, metrics=chunk)
        self.client.log_batch(
            self.run_id, metrics=chunks[-1], tags=[RunTag(k, str(v)) for k, v in tags.items()]
        )
        if artifacts is not None and artifacts.exists():
            self.client.log_artifacts(self.run_id, str(artifacts))
        self.client.set_terminated(self.run_id, status=status)


def _ticks(tags: Mapping[str, str]) -> int | None:
    """The recorded start time of a run's process (runs from before it was recorded: None)."""
    value = tags.get("pid_start") or ""
    return int(value) if value.isdigit() else None
