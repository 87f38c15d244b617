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
* `Watchdog`: ends a trial stuck inside one call (a hung model call or engine call) at its
  wall-clock limit; the loop's own between-turn check covers the rest.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import math
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("ctxbench.study")

WATCHDOG_GRACE_S = 5.0  # past the deadline, the loop's own check has had its chance


# --------------------------------------------------------------------------------- watchdog
class Watchdog:
    """Raise `exc_type()` in the arming thread if it is still running `timeout_s` later.

    In the main thread this is SIGALRM: the handler runs even while the thread is blocked in a
    socket read or a sleep (the syscall returns EINTR, PEP 475 runs the handler, which
    raises). An earlier SIGALRM timer (pytest-timeout uses one) is saved and restored. In any
    other thread it falls back to an asynchronous exception, which lands when the thread next
    runs Python bytecode (a call blocked in C for good is then bounded by that call's own
    timeout: ENGINE_TIMEOUT_S for the engine, the HTTP timeout for providers)."""

    def __init__(self, timeout_s: float, exc_type: type[BaseException]) -> None:
        self.timeout_s = max(0.001, float(timeout_s))
        self.exc_type = exc_type
        self.fired = False
        self._armed = False
        self._prev_handler: Any = None
        self._prev_timer: tuple[float, float] = (0.0, 0.0)
        self._armed_at = 0.0
        self._timer: threading.Timer | None = None
        self._main = threading.current_thread() is threading.main_thread()

    def _on_alarm(self, signum: int, frame: Any) -> None:
        if self._armed:  # a disarmed watchdog never interrupts cleanup
            self._armed = False
            self.fired = True
            raise self.exc_type()

    def _async_raise(self, ident: int) -> None:
        if not self._armed:
            return
        self._armed = False
        self.fired = True
        # Only a class can be injected; it is instantiated without arguments.
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(self.exc_type))

    def __enter__(self) -> Watchdog:
        self._armed = True
        self._armed_at = time.monotonic()
        if self._main:
            self._prev_handler = signal.signal(signal.SIGALRM, self._on_alarm)
            self._prev_timer = signal.setitimer(signal.ITIMER_REAL, self.timeout_s)
        else:
            self._timer = threading.Timer(self.timeout_s, self._async_raise, args=(threading.get_ident(),))
            self._timer.daemon = True
            self._timer.start()
        return self

    def disarm(self) -> None:
        if not self._armed and self._prev_handler is None and self._timer is None:
            return
        self._armed = False
        if self._main and self._prev_handler is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._prev_handler)
            self._prev_handler = None
            remaining, interval = self._prev_timer
            if remaining > 0:  # give the earlier timer back what it had left
                left = remaining - (time.monotonic() - self._armed_at)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), interval)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def __exit__(self, *exc: object) -> None:
        self.disarm()


_TIMEOUT_EXC: type[BaseException] | None = None


def timeout_exception() -> type[BaseException]:
    """`TrialFailed("timeout")` as a class constructible without arguments (bench.loop is
    imported lazily: the launching process of a study never needs it)."""
    global _TIMEOUT_EXC
    if _TIMEOUT_EXC is None:
        from bench.loop import TrialFailed

        class TrialTimeout(TrialFailed):
            def __init__(self, detail: str = "watchdog: the trial was stuck inside one call past its "
                                             "wall-clock limit") -> None:
                super().__init__("timeout", detail)

        _TIMEOUT_EXC = TrialTimeout
    return _TIMEOUT_EXC


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


# Outcome of one job, as recorded in progress.jsonl.
OUTCOMES = ("success", "failure", "error", "killed", "skipped", "running_elsewhere", "crashed")


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


# ---------------------------------------------------------------------- the MLflow parent run
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
    from bench.tracking import _client, experiment_id

    uri = str(config.tracking.uri)
    client = _client(uri)
    exp = experiment_id(client, str(config.tracking.experiment), str(config.tracking.get("artifact_root") or ""))
    return client, exp, Path(str(config.results_dir))


def open_study_run(config: DictConfig, jobs: list[list[str]] | None) -> str:
    """Find or create the study's parent run; record this invocation (config, code version)."""
    import subprocess
    import sys

    from bench.config import ROOT
    from bench.tracking import code_version, study_run_id

    client, exp, results_dir = _tracking(config)
    study = str(config.study.name)
    conf = _study_config(config, jobs)
    run_id = study_run_id(client, exp, study, results_dir, conf)
    version = code_version()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    client.set_tag(run_id, "git_sha", version)
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


# --------------------------------------------------------------------------- command line
def status(study: str, uri: str, experiment: str = "ctxbench") -> dict[str, Any]:
    """Per-status counts of a study's trial runs, and config hashes with more than one
    FINISHED run (which must never happen)."""
    from bench.tracking import _client

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
