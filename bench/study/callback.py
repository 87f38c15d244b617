"""Studies: every Hydra multirun is one study (docs/studies.md, docs/scaling.md).

    python -m bench -m strategy=raw,ledger arm=baseline,drift   # a study named adhoc-<8 hex>
    python -m bench -m experiment=grid                          # run, or resume, the grid
    python -m bench -m experiment=grid hydra/launcher=ctxbench_ray   # the same on a Ray cluster
    python -m bench.study sweep                                 # remove orphaned containers
    python -m bench.study status grid                           # planned / finished, from MLflow

What lives here:

* `StudyCallback`, a Hydra callback, on by default for every multirun (conf/config.yaml,
  `conf/hydra/callbacks/study.yaml`); in a single run it stays out of the way. At multirun
  start, in the launching process, it names the study (`study.name`, or for a plain multirun
  `adhoc-<8 hex>` from the trials it plans), removes containers left by dead harness
  processes (only those: other studies may be running), hashes every planned trial
  (bench.study.plan) and records the plan in the study's MLflow parent run, created or
  reopened with the study's config, sweep and code version. After each trial, in whichever
  process ran it (a joblib/Ray worker, a SLURM job), it reads the trial's result from the
  job's return value, appends a record to the sweep dir's `progress.jsonl` and logs
  `done/total, failures, ETA`. A trial that raised (not a verdict, not an infra failure the
  trial caught itself) is recorded as `crashed` and does not stop the study; the study then
  ends with a non-zero exit.

Elsewhere: progress accounting is bench.study.progress; the plan is bench.study.plan; the
study's MLflow parent run is bench.tracking.study_records; the command line is
bench/study/__main__.py.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from bench.study.progress import _append, planned_jobs, progress_line, read_progress, summarize, tail
from bench.tracking.study_records import close_study_run, open_study_run

log = logging.getLogger("ctxbench.study")

# How the jobs learn the study's name: conf/config.yaml reads `study.name` from it when no name
# is given. Hydra composes each job's config from its overrides alone, and only this callback
# sees the whole sweep, so it sets the variable before the launcher starts (workers inherit it)
# and again in each job before the trial reads its config.
STUDY_ENV = "CTXBENCH_STUDY"


def study_name(config: DictConfig, jobs: list[list[str]] | None) -> tuple[str, bool]:
    """(name, derived): `study.name` when given (command line, experiment, $CTXBENCH_STUDY);
    else `adhoc-<8 hex>` named after the trials the sweep plans, so the same command resumes
    the same study and a different sweep is another study."""
    if os.environ.get(STUDY_ENV) or not OmegaConf.is_interpolation(config.study, "name"):
        return str(config.study.name), False
    from bench.study.plan import derived_name

    overrides = [str(o) for o in OmegaConf.select(config, "hydra.overrides.task") or []]
    return derived_name(jobs if jobs is not None else [overrides]), True


class StudyCallback(Callback):
    """See the module docstring. State set in on_multirun_start travels to the workers: the
    launchers pickle the callbacks (inside the HydraContext) after that hook has run."""

    def __init__(self, sweep_orphans: bool = True, keep_going: bool = True) -> None:
        self.sweep_orphans = sweep_orphans
        self.keep_going = keep_going
        self.study = ""  # set at multirun start; empty in a single run, where every hook is a no-op
        self.total: int | None = None
        self.started_wall = 0.0
        self.progress_path: str | None = None
        self.parent_run_id: str | None = None
        self.launcher_pid = 0
        # per thread: hydra/launcher=ctxbench_threads runs jobs as threads
        self._job_started = threading.local()
        self._env_before: str | None = None
        self.budget: Any = None  # bench.tracking.study_budget.Budget when study.budget_* is set
        self.ledger: str | None = None

    def __getstate__(
        self,
    ) -> dict[str, Any]:  # the launchers pickle the callback; a thread-local is not picklable
        return {**self.__dict__, "_job_started": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._job_started = threading.local()

    # -- in the launching process --------------------------------------------------------
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.started_wall = time.time()
        self.launcher_pid = os.getpid()
        jobs = planned_jobs(config)
        self.study, derived = study_name(config, jobs)
        self._env_before = os.environ.get(STUDY_ENV)
        os.environ[STUDY_ENV] = self.study
        if derived:
            log.info(
                "[study %s] a multirun without study.name: named after the %s trials it plans; the same "
                "command resumes it (study.name=NAME names it)",
                self.study,
                len(jobs) if jobs else "?",
            )
        self.total = len(jobs) if jobs is not None else None
        sweep_dir = Path(str(config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        self.progress_path = str(sweep_dir / "progress.jsonl")
        if self.sweep_orphans and OmegaConf.select(config, "sandbox.kind") == "docker":
            from bench.sandbox import sweep

            removed = sweep(orphans_only=True)
            if removed:
                log.warning(
                    "[study %s] removed %d container(s) left by dead harness processes", self.study, removed
                )
        entries = None
        if jobs is not None:
            from bench.study.plan import plan_trials

            t0 = time.monotonic()
            try:
                entries = plan_trials(config, jobs)
            except Exception:  # without a plan the report counts what ran, and says so
                log.warning("[study %s] could not plan the sweep's trials", self.study, exc_info=True)
            if entries is not None:
                log.info(
                    "[study %s] plan: %d jobs hashed in %.1fs",
                    self.study,
                    len(entries),
                    time.monotonic() - t0,
                )
                for e in [e for e in entries if not e.get("config_hash")][:5]:
                    log.warning(
                        "[study %s] planned job %s will crash: %s (%s)",
                        self.study,
                        e["job"],
                        e["error"],
                        " ".join(e["overrides"]),
                    )
        self._open_budget(config)
        try:
            self.parent_run_id = open_study_run(config, self.study, jobs, entries)
        except Exception:  # tracking trouble shows up again, loudly, in the first trial
            log.warning("[study %s] could not create the study's parent run", self.study, exc_info=True)
        log.info(
            "[study %s] %s trials planned; progress in %s",
            self.study,
            self.total if self.total is not None else "?",
            self.progress_path,
        )

    def _open_budget(self, config: DictConfig) -> None:
        """With study.budget_*: the ledger seeded with what earlier invocations spent, and the estimate."""
        from bench.tracking import study_budget

        self.budget = study_budget.Budget.from_study(OmegaConf.to_container(config.study, resolve=True))  # type: ignore[arg-type]
        if self.budget is None:
            return
        path = study_budget.ledger_path(str(config.results_dir), self.study)
        self.ledger = str(path)
        usd, tokens, ended = study_budget.spent_so_far(
            str(config.tracking.uri), str(config.tracking.experiment), self.study
        )
        state = study_budget.seed(path, usd, tokens, ended)
        remaining = None if self.total is None else max(self.total - ended, 0)
        log.info(
            "[study %s] %s, for %s trials still to run",
            self.study,
            study_budget.describe(self.budget, state, remaining),
            "?" if remaining is None else remaining,
        )

    def _budget_line(self, s: dict[str, Any]) -> str:
        if self.budget is None or self.ledger is None:
            return ""
        from bench.tracking import study_budget

        remaining = (
            None
            if s["total"] is None
            else s["total"] - s["done"] + s["counts"].get(study_budget.BUDGET_EXHAUSTED, 0)
        )
        return " | " + study_budget.describe(self.budget, study_budget.read(Path(self.ledger)), remaining)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self._env_before is None:
            os.environ.pop(STUDY_ENV, None)
        else:
            os.environ[STUDY_ENV] = self._env_before
        records = read_progress(Path(self.progress_path)) if self.progress_path else []
        s = summarize(records, self.total, time.time() - self.started_wall)
        log.info(progress_line(self.study, s).replace("done:", "finished:", 1) + self._budget_line(s))
        unstarted = s["counts"].get("budget_exhausted", 0)
        if unstarted:
            log.warning(
                "[study %s] ended: budget_exhausted, %d trial(s) not started; rerun with a larger "
                "study.budget_usd / study.budget_tokens to run them (the finished ones are kept)",
                self.study,
                unstarted,
            )
        if self.progress_path:
            (Path(self.progress_path).parent / "study.json").write_text(
                json.dumps(
                    {
                        "study": self.study,
                        **s,
                        "parent_run_id": self.parent_run_id,
                        "end": "budget_exhausted" if unstarted else "complete",
                    },
                    indent=2,
                )
            )
        crashed = [r for r in records if r.get("outcome") == "crashed"]
        if self.parent_run_id:
            with contextlib.suppress(Exception):
                close_study_run(config, self.parent_run_id, s, failed=bool(crashed))
        if crashed:
            lines = "\n".join(
                f"  job {r.get('job')}: {' '.join(r.get('overrides') or [])}: {r.get('error')}"
                for r in crashed[:20]
            )
            log.error("study %s: %d trial(s) crashed (the others ran):\n%s", self.study, len(crashed), lines)
            # Hydra turns an Exception from a callback into a warning (exit status 0): SystemExit
            # passes through, so a study with crashed trials exits non-zero, after all of them ran.
            raise SystemExit(
                f"study {self.study}: {len(crashed)} trial(s) crashed; see the log above "
                f"and {self.progress_path}"
            )

    # -- in the process that runs the trial ------------------------------------------------
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        if not self.study:
            return
        os.environ[STUDY_ENV] = self.study  # a Ray or SLURM worker did not inherit it
        self._job_started.t = time.monotonic()

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        if not self.study:  # a single run: its exception reaches the user, as without the callback
            return
        from hydra.core.utils import JobStatus

        from bench.trial.runner import TrialResult

        record: dict[str, Any] = {
            "job": OmegaConf.select(config, "hydra.job.num"),
            "overrides": list(job_return.overrides or []),
            "wall_s": round(time.monotonic() - getattr(self._job_started, "t", time.monotonic()), 2),
            "ts": time.time(),
            "host": os.uname().nodename,
            "pid": os.getpid(),
            "launcher_pid": self.launcher_pid,
            # the process's CPU so far (all its threads): `make bench` tells a worker's start
            # (imports, a first connection) from its trials (bench/perf/grid.py)
            "cpu_s": round(time.process_time(), 3),
        }
        result = job_return._return_value  # the task function's return value, or its exception
        if job_return.status == JobStatus.FAILED:
            record.update(outcome="crashed", error=f"{type(result).__name__}: {result}"[:500])
            log.error("[study %s] job %s crashed: %s", self.study, record["job"], record["error"])
            if self.keep_going:  # one bad trial never stops the study (Hydra would raise on it)
                job_return.status = JobStatus.COMPLETED
                job_return.return_value = math.nan
        elif isinstance(result, TrialResult):
            outcome = (
                (
                    {"running": "running_elsewhere", "budget_exhausted": "budget_exhausted"}.get(
                        result.status, "skipped"
                    )
                )
                if result.skipped
                else result.status
            )
            record.update(outcome=outcome, run_id=result.run_id, reason=result.failure_reason)
        else:  # another task function (a test's): its truthiness is the verdict
            record.update(outcome="success" if result else "failure")
        if self.progress_path is None:
            return
        path = Path(self.progress_path)
        with contextlib.suppress(OSError):
            _append(path, record)
            s = summarize(tail(path).read(), self.total, time.time() - self.started_wall)
            log.info(progress_line(self.study, s) + self._budget_line(s))
