"""hydra/launcher=ctxbench_threads (many trials in flight in one process) against joblib (one
trial per worker process) on the same plan: the same verdicts, MLflow records and event logs,
all but timings; jobs run in threads of the launching process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.config import ROOT
from bench.eventlog.events import comparable
from tests.helpers.store import seeded

PLAN = ["strategy=raw,ledger", "arm=baseline,drift", "sandbox=local", "++task.size.steps=6", "study.name=both"]
TIMINGS = {"latency_s", "ttft_s", "turn_latency_s", "wall_s", "queue_ms"}  # of the run, not the trial's result
VOLATILE_TAGS = {"pid", "pid_start", "host", "mlflow.parentRunId", "events_sha256"}  # the hash covers the event timings


def _start(results: Path, *launcher: str) -> subprocess.Popen:
    env = {**os.environ, "CTXBENCH_RESULTS": str(seeded(results)), "PYTHONUNBUFFERED": "1"}
    env.pop("CTXBENCH_STUDY", None)
    return subprocess.Popen([sys.executable, "-m", "bench", "-m", *PLAN, *launcher], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(proc: subprocess.Popen) -> str:
    try:
        out = proc.communicate(timeout=900)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out[-3000:]
    return out


def _records(results: Path) -> dict[str, dict]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{results}/mlflow.db")
    exp = client.get_experiment_by_name("ctxbench")
    out = {}
    for r in client.search_runs([exp.experiment_id], filter_string="tags.`ctxbench.kind` = 'trial'"):
        events = Path(results / "trials").glob(f"{r.data.tags['config_hash']}-*/events.jsonl")
        (path,) = list(events)
        history = {k: [m.value for m in client.get_metric_history(r.info.run_id, k)]
                   for k in ("prompt_tokens", "output_tokens", "cached_tokens")}
        out[r.data.tags["config_hash"]] = {
            "status": r.info.status,
            "metrics": {k: v for k, v in r.data.metrics.items() if k not in TIMINGS},
            "params": {k: v.replace(str(results), "<results>") for k, v in r.data.params.items()},
            "tags": {k: v for k, v in r.data.tags.items() if k not in VOLATILE_TAGS},
            "history": history,
            "events": comparable([json.loads(x) for x in path.read_text().splitlines()]),
        }
    return out


@pytest.mark.timeout(900)  # two studies (or one, paced) on a loaded machine: minutes
def test_threads_and_processes_give_the_same_trials(tmp_path):
    processes, threads = tmp_path / "processes", tmp_path / "threads"
    # Both studies at once, each in its own results folder: neither reads the other's store, and
    # the comparison leaves out timings, so the one-process study fills the second core while the
    # two joblib workers share both.
    joblib = _start(processes, "hydra/launcher=ctxbench_joblib", "hydra.launcher.n_jobs=2")
    threaded = _start(threads, "hydra/launcher=ctxbench_threads", "hydra.launcher.n_jobs=4")
    try:
        _finish(joblib)
    finally:
        out = _finish(threaded)
    assert "ctxbench threads launcher: 4 jobs, 4 in flight" in out
    a, b = _records(processes), _records(threads)
    assert len(a) == 4 and a.keys() == b.keys()
    for h in a:
        assert a[h] == b[h], h
    progress = [json.loads(x) for x in next((threads / "hydra" / "multirun" / "both").iterdir())
                .joinpath("progress.jsonl").read_text().splitlines()]
    assert {p["pid"] for p in progress} == {p["launcher_pid"] for p in progress}  # one process, four threads
    assert all(p["wall_s"] > 0.5 for p in progress)  # each job's own start, not another thread's


def test_chdir_is_refused_with_the_fix(tmp_path):
    env = {**os.environ, "CTXBENCH_RESULTS": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "bench", "-m", "sandbox=local", "hydra/launcher=ctxbench_threads",
                           "hydra.job.chdir=true"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "set hydra.job.chdir=false" in proc.stdout + proc.stderr


@pytest.mark.parametrize("n", [0, -3, "many"])
def test_bad_n_jobs(n):
    from hydra_plugins.ctxbench_threads.launcher import ThreadsLauncher

    with pytest.raises(ValueError, match="hydra.launcher.n_jobs must be an integer >= 1"):
        ThreadsLauncher(n_jobs=n)  # type: ignore[arg-type]
