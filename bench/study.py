"""Studies: one Hydra multirun is one study (DESIGN §1, §8.4; docs/scaling.md).

    python -m bench -m experiment=grid                          # run, or resume, the grid
    python -m bench -m experiment=grid hydra/launcher=ctxbench_ray   # the same on a Ray cluster
    python -m bench.study sweep                                 # remove orphaned containers
    python -m bench.study status grid                           # counts per status, from MLflow

What lives here:

* `StudyCallback`, a Hydra callback (`conf/hydra/callbacks/study.yaml`). At multirun start,
  in the launching process, it removes containers left by dead harness processes (only
  those: other studies may be running), creates or reopens the study's MLflow parent run
  with the study's config, sweep and code version, and counts the planned trials. After each
  trial, in whichever process ran it (a joblib/Ray worker, a SLURM job), it appends a record
  to the sweep dir's `progress.jsonl` and logs `done/total, failures, ETA`. A trial that
  raised (not a verdict, not an infra failure the trial caught itself) is recorded as
  `crashed` and does not stop the study; the study then ends with a non-zero exit.
* Progress accounting: the planned trial count and the `progress.jsonl` records, summarised.
* `trial_watchdog`: the watchdog (bench.watchdog) armed around a trial, with the grace it gets
  past the trial's own deadline.
* The `python -m bench.study` command line.

Elsewhere: the watchdog's mechanism is bench.watchdog; the study's MLflow parent run and the
per-status counts of its trials are bench.study_tracking. Both are re-exported here.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from bench.study_tracking import close_study_run, open_study_run, status
from bench.watchdog import Watchdog, timeout_exception

log = logging.getLogger("ctxbench.study")

WATCHDOG_GRACE_S = 5.0  # past the deadline, the loop's own check has had its chance


# --------------------------------------------------------------------------------- watchdog
# The grace lives here, not in bench.watchdog: tests tune it as bench.study.WATCHDOG_GRACE_S,
# and trial_watchdog must read it from this module for that to take effect.
def trial_watchdog(timeout_s: float) -> Watchdog:
    """Fires WATCHDOG_GRACE_S after the trial's own deadline (limits.trial_timeout_s)."""
    return Watchdog(timeout_s + WATCHDOG_GRACE_S, timeout_exception())


# ------------------------------------------------------------------------------ the sweep
def planned_jobs(cfg: DictConfig) -> list[list[str]] | None:
    """The override lists Hydra's BasicSweeper will launch (None for other sweepers)."""
    try:
        target = str(OmegaConf.select(cfg, "hydra.sweeper._target_") or "")
        if not target.endswith("BasicSweeper"):
            return None
        from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
        from hydra.core.override_parser.overrides_parser import OverridesParser

        params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
        args = [f"{k}={v}" for k, v in params.items()] + list(OmegaConf.select(cfg, "hydra.overrides.task") or [])
        batches = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(args), None)
        return [list(job) for job in batches[0]]
    except Exception:  # counting is a nicety; never stop a study over it
        log.debug("could not expand the sweep", exc_info=True)
        return None


def _fmt_s(s: float) -> str:
    s = int(round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def summarize(records: Sequence[Mapping[str, Any]], total: int | None, elapsed_s: float) -> dict[str, Any]:
    latest: dict[Any, Mapping[str, Any]] = {}
    for r in records:  # a job recorded twice (a launcher retry) counts once: its latest record
        latest[r.get("job")] = r
    counts = Counter(str(r.get("outcome")) for r in latest.values())
    done = len(latest)
    executed = done - counts["skipped"] - counts["running_elsewhere"]
    remaining = (total - done) if total is not None else None
    eta = None
    if remaining is not None and executed > 0 and elapsed_s > 0:
        eta = remaining / (executed / elapsed_s)
    return {"done": done, "total": total, "executed": executed, "counts": dict(counts),
            "elapsed_s": round(elapsed_s, 1), "eta_s": None if eta is None else round(eta, 1)}


def progress_line(study: str, s: Mapping[str, Any]) -> str:
    c = s["counts"]
    total = s["total"] if s["total"] is not None else "?"
    pct = f" ({100 * s['done'] / s['total']:.0f}%)" if s["total"] else ""
    eta = _fmt_s(s["eta_s"]) if s["eta_s"] is not None else "?"
    return (f"[study {study}] {s['done']}/{total}{pct} done: {c.get('success', 0)} ok, "
            f"{c.get('failure', 0)} failed, {c.get('error', 0) + c.get('killed', 0)} infra errors, "
            f"{c.get('crashed', 0)} crashed, {c.get('skipped', 0) + c.get('running_elsewhere', 0)} skipped"
            f" | elapsed {_fmt_s(s['elapsed_s'])}, ETA {eta}")


def read_progress(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def _append(path: Path, record: Mapping[str, Any]) -> None:
    # One write() of one line with O_APPEND: concurrent workers never interleave within a line.
    line = (json.dumps(record, sort_keys=True, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------- the callback
class StudyCallback(Callback):
    """See the module docstring. State set in on_multirun_start travels to the workers: the
    launchers pickle the callbacks (inside the HydraContext) after that hook has run."""

    def __init__(self, sweep_orphans: bool = True, keep_going: bool = True) -> None:
        self.sweep_orphans = sweep_orphans
        self.keep_going = keep_going
        self.study = "adhoc"
        self.total: int | None = None
        self.started_wall = 0.0
        self.progress_path: str | None = None
        self.parent_run_id: str | None = None
        self.launcher_pid = 0
        self._job_started = 0.0

    # -- in the launching process --------------------------------------------------------
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.started_wall = time.time()
        self.launcher_pid = os.getpid()
        self.study = str(OmegaConf.select(config, "study.name") or "adhoc")
        jobs = planned_jobs(config)
        self.total = len(jobs) if jobs is not None else None
        sweep_dir = Path(str(config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        self.progress_path = str(sweep_dir / "progress.jsonl")
        if self.sweep_orphans and OmegaConf.select(config, "sandbox.kind") == "docker":
            from bench.sandbox import sweep

            removed = sweep(orphans_only=True)
            if removed:
                log.warning("[study %s] removed %d container(s) left by dead harness processes",
                            self.study, removed)
        try:
            self.parent_run_id = open_study_run(config, jobs)
        except Exception:  # tracking trouble shows up again, loudly, in the first trial
            log.warning("[study %s] could not create the study's parent run", self.study, exc_info=True)
        log.info("[study %s] %s trials planned; progress in %s", self.study,
                 self.total if self.total is not None else "?", self.progress_path)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        records = read_progress(Path(self.progress_path)) if self.progress_path else []
        s = summarize(records, self.total, time.time() - self.started_wall)
        log.info(progress_line(self.study, s).replace("done:", "finished:", 1))
        if self.progress_path:
            (Path(self.progress_path).parent / "study.json").write_text(json.dumps(
                {"study": self.study, **s, "parent_run_id": self.parent_run_id}, indent=2))
        crashed = [r for r in records if r.get("outcome") == "crashed"]
        if self.parent_run_id:
            with contextlib.suppress(Exception):
                close_study_run(config, self.parent_run_id, s, failed=bool(crashed))
        if crashed:
            lines = "\n".join(f"  job {r.get('job')}: {' '.join(r.get('overrides') or [])}: {r.get('error')}"
                              for r in crashed[:20])
            log.error("study %s: %d trial(s) crashed (the others ran):\n%s", self.study, len(crashed), lines)
            # Hydra turns an Exception from a callback into a warning (exit status 0): SystemExit
            # passes through, so a study with crashed trials exits non-zero, after all of them ran.
            raise SystemExit(f"study {self.study}: {len(crashed)} trial(s) crashed; see the log above "
                             f"and {self.progress_path}")

    # -- in the process that runs the trial ------------------------------------------------
    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._job_started = time.monotonic()
        from bench import trial

        trial.last_result = None

    def on_job_end(self, config: DictConfig, job_return: Any, **kwargs: Any) -> None:
        from hydra.core.utils import JobStatus

        from bench import trial

        record: dict[str, Any] = {
            "job": OmegaConf.select(config, "hydra.job.num"), "overrides": list(job_return.overrides or []),
            "wall_s": round(time.monotonic() - self._job_started, 2), "ts": time.time(),
            "host": os.uname().nodename, "pid": os.getpid(), "launcher_pid": self.launcher_pid}
        result = trial.last_result
        if job_return.status == JobStatus.FAILED:
            exc = job_return._return_value
            record.update(outcome="crashed", error=f"{type(exc).__name__}: {exc}"[:500])
            log.error("[study %s] job %s crashed: %s", self.study, record["job"], record["error"])
            if self.keep_going:  # one bad trial never stops the study (Hydra would raise on it)
                job_return.status = JobStatus.COMPLETED
                job_return.return_value = math.nan
        elif result is not None:
            outcome = ("running_elsewhere" if result.status == "running" else "skipped") if result.skipped \
                else result.status
            record.update(outcome=outcome, run_id=result.run_id, reason=result.failure_reason)
        else:
            record.update(outcome="success" if job_return._return_value else "failure")
        if self.progress_path is None:
            return
        path = Path(self.progress_path)
        with contextlib.suppress(OSError):
            _append(path, record)
            s = summarize(read_progress(path), self.total, time.time() - self.started_wall)
            log.info(progress_line(self.study, s))


# --------------------------------------------------------------------------- command line
@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    logging.getLogger("alembic").setLevel(logging.WARNING)
    yield


def main(argv: list[str] | None = None) -> int:
    import argparse

    from bench.config import compose, load

    p = argparse.ArgumentParser(prog="python -m bench.study", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sw = sub.add_parser("sweep", help="remove containers whose harness process is dead")
    sw.add_argument("--all", action="store_true",
                    help="remove EVERY ctxbench container, also those of studies running now")
    st = sub.add_parser("status", help="per-status counts of a study's trials")
    st.add_argument("study")
    st.add_argument("overrides", nargs="*", help="config overrides, e.g. tracking.uri=http://host:5000")
    a = p.parse_args(argv)
    if a.cmd == "sweep":
        from bench.sandbox import sweep

        print(f"removed {sweep(orphans_only=not a.all)} container(s)")
        return 0
    with _quiet():
        tcfg = load(compose(list(a.overrides)))
        print(json.dumps(status(a.study, tcfg.tracking.uri, tcfg.tracking.experiment), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
