"""Helpers for tests that run whole studies as subprocesses (`python -m bench -m ...`) and read
their outcome back from MLflow: the launcher, tracking-server and SQLite-concurrency tests.

`locked_joblib_study` is the reference they share (tests/bench/conftest.py runs it once per
session): the 4-trial PLAN through 4 joblib workers while the test holds the SQLite store
locked past MLflow's own busy timeout. The SQLite test checks it lost no run; the launcher
tests check that Ray and submitit produce exactly its trials."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.config import ROOT

# 2 strategies x 2 arms of one shrunk task: 4 trials, a few seconds each.
PLAN = (
    "strategy=raw,ledger",
    "arm=baseline,drift",
    "task=signature_migration",
    "task.seed=0",
    "++task.size.steps=6",
)


def study_cmd(study: str, overrides: Sequence[str]) -> list[str]:
    """`experiment=grid` shrunk to PLAN (plus `overrides`)."""
    return [sys.executable, "-m", "bench", "-m", "experiment=grid", *PLAN, *overrides, f"study.name={study}"]


def study_env(results: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "CTXBENCH_RESULTS": str(results), **(env or {})}


def run_study(
    study: str,
    results: Path,
    overrides: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> str:
    """Run the study to its end; return its output; fail on a non-zero exit."""
    cmd = study_cmd(study, overrides)
    proc = subprocess.run(
        cmd, cwd=ROOT, env=study_env(results, env), capture_output=True, text=True, timeout=timeout
    )
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
    rows = frozenset(
        (
            r.data.tags["config_hash"],
            r.info.status,
            r.data.tags["status"],
            r.data.metrics["success"],
            r.data.tags["final_tree_sha"],
        )
        for r in trials
    )
    counts = {k: v for k, v in parent.data.metrics.items() if k.startswith("trials_")}
    return StudyOutcome(rows, len(trials), parent.info.status, counts, parent.info.run_id)


@dataclass(frozen=True)
class Reference:
    results: Path
    study: str
    outcome: StudyOutcome
    output: str  # the study's stdout + stderr (the workers' logs included)
    lock_s: float


def _trial_runs(db: Path, study: str) -> list[tuple[str, str]]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute(
                "select r.run_uuid, r.status from runs r join tags s on s.run_uuid = r.run_uuid "
                "and s.key = 'study' and s.value = ? join tags k on k.run_uuid = r.run_uuid and "
                "k.key = 'ctxbench.kind' and k.value = 'trial'",
                (study,),
            ).fetchall()
    except sqlite3.Error:  # not created yet, or locked by a writer: poll again
        return []


def locked_joblib_study(results: Path, lock_s: float = 24.0) -> Reference:
    """PLAN through joblib with 4 workers; once the first trial run exists (the workers are
    writing), hold an EXCLUSIVE lock on the store for `lock_s` (> MLflow's 20 s busy timeout),
    so every write the workers attempt meanwhile is refused by SQLite at least once."""
    study = f"joblib4-{uuid.uuid4().hex[:6]}"
    db = results / "mlflow.db"
    proc = subprocess.Popen(
        study_cmd(study, ["hydra.launcher.n_jobs=4"]),
        cwd=ROOT,
        env=study_env(results),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not _trial_runs(db, study):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0][-3000:]
            time.sleep(0.2)
        with sqlite3.connect(db, timeout=60) as con:
            con.execute("BEGIN EXCLUSIVE")  # no other reader or writer until the rollback
            time.sleep(lock_s)
            con.rollback()
        out = proc.communicate(timeout=400)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out[-4000:]
    return Reference(results, study, study_outcome(f"sqlite:///{db}", study), out, lock_s)


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
    ports = {
        f"--{k}": str(free_port())
        for k in (
            "ray-client-server-port",
            "dashboard-agent-listen-port",
            "dashboard-agent-grpc-port",
            "runtime-env-agent-port",
            "metrics-export-port",
            "node-manager-port",
            "object-manager-port",
        )
    }
    cmd = [
        str(ray),
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={port}",
        f"--num-cpus={num_cpus}",
        "--object-store-memory=100000000",
        "--include-dashboard=false",
        "--disable-usage-stats",
        f"--temp-dir={tmp}",
        *[f"{k}={v}" for k, v in ports.items()],
    ]
    log = open(tmp / "head.log", "wb")
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **RAY_LOCAL_ENV}, start_new_session=True
    )
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
