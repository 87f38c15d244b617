"""Helpers for tests that run whole studies as subprocesses (`python -m bench -m ...`) and read
their outcome back from MLflow: the launcher, tracking-server and SQLite-concurrency tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.config import ROOT

# 2 strategies x 2 arms of one shrunk task: 4 trials, a few seconds each.
PLAN = ("strategy=raw,ledger", "arm=baseline,drift", "task=signature_migration", "task.seed=0",
        "++task.size.steps=6")


def study_cmd(study: str, overrides: Sequence[str]) -> list[str]:
    """`experiment=grid` shrunk to PLAN (plus `overrides`)."""
    return [sys.executable, "-m", "bench", "-m", "experiment=grid", *PLAN, *overrides, f"study.name={study}"]


def study_env(results: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "CTXBENCH_RESULTS": str(results), **(env or {})}


def run_study(study: str, results: Path, overrides: Sequence[str], *, env: dict[str, str] | None = None,
              timeout: float = 600) -> str:
    """Run the study to its end; return its output; fail on a non-zero exit."""
    cmd = study_cmd(study, overrides)
    proc = subprocess.run(cmd, cwd=ROOT, env=study_env(results, env), capture_output=True, text=True,
                          timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{out[-4000:]}"
    return out


@dataclass(frozen=True)
class StudyOutcome:
    trials: frozenset[tuple[str, str, str, float, str]]  # (config_hash, mlflow status, status, success, tree)
    n_runs: int  # trial runs of any status
    parent_status: str
    parent_counts: dict[str, float]  # the parent run's trials_* metrics
    parent_run_id: str


def study_outcome(uri: str, study: str) -> StudyOutcome:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("ctxbench")
    assert exp is not None, f"no ctxbench experiment at {uri}"
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.study = '{study}'", max_results=1000)
    trials = [r for r in runs if r.data.tags.get("ctxbench.kind") == "trial"]
    (parent,) = [r for r in runs if r.data.tags.get("ctxbench.kind") == "study"]
    assert all(r.data.tags.get("mlflow.parentRunId") == parent.info.run_id for r in trials)
    rows = frozenset((r.data.tags["config_hash"], r.info.status, r.data.tags["status"],
                      r.data.metrics["success"], r.data.tags["final_tree_sha"]) for r in trials)
    counts = {k: v for k, v in parent.data.metrics.items() if k.startswith("trials_")}
    return StudyOutcome(rows, len(trials), parent.info.status, counts, parent.info.run_id)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# Ray replaces a loopback --node-ip-address with the host's routed address on Linux unless it
# is told this is a single-machine instance (the mode it uses on macOS): keep every socket of
# the test's cluster on 127.0.0.1. Token authentication off for this throwaway instance.
RAY_LOCAL_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}


@contextlib.contextmanager
def ray_head(num_cpus: int = 2) -> Iterator[str]:
    """A Ray head node on loopback, in its own temp dir and session; yields its address (what
    workers and drivers join with RAY_ADDRESS). Every port is chosen free, so two of these can
    run at once. Ended by signalling its process group: never `ray stop`, which stops every
    Ray on the machine."""
    ray = Path(sys.executable).with_name("ray")
    tmp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # unix socket paths must stay short
    port = free_port()
    ports = {f"--{k}": str(free_port()) for k in (
        "ray-client-server-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
        "runtime-env-agent-port", "metrics-export-port", "node-manager-port", "object-manager-port")}
    cmd = [str(ray), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
           f"--num-cpus={num_cpus}", "--object-store-memory=100000000", "--include-dashboard=false",
           "--disable-usage-stats", f"--temp-dir={tmp}", *[f"{k}={v}" for k, v in ports.items()]]
    log = open(tmp / "head.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **RAY_LOCAL_ENV},
                            start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while b"Ray runtime started" not in (tmp / "head.log").read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray head did not start:\n{(tmp / 'head.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield address
    finally:
        _end_group(proc)
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _end_group(proc: subprocess.Popen, grace_s: float = 10) -> None:
    """SIGTERM the process group we started (its leader's pgid is its pid), SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _group_alive(proc.pid):
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # Zombies count as gone: their parent (in the group) reaps them or dies with it.
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
    return False
