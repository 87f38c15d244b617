"""Many workers, one SQLite store: a write refused with "database is locked" is retried with
backoff (bench.tracking.retry), so no trial's run is lost or left RUNNING.

The study test attacks it: 4 joblib workers run a 4-trial study while the test holds an
EXCLUSIVE lock on the store for longer than MLflow's own busy timeout (20 s), so every write
the workers attempt meanwhile is refused by SQLite at least once."""

from __future__ import annotations

import sqlite3
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from bench.config import ROOT
from bench.tracking.retry import RetryingClient, is_locked, with_retry
from tests.bench.study.studies import study_cmd, study_env, study_outcome

LOCKED = sqlite3.OperationalError("database is locked")


def test_retry_repeats_a_locked_call_with_growing_waits_until_it_succeeds():
    calls, waits = [], []

    def flaky():
        calls.append(1)
        if len(calls) < 5:
            raise RuntimeError(f"(sqlite3.OperationalError) {LOCKED}")  # as MlflowException words it
        return "ok"

    assert with_retry(flaky, "create_run", sleep=waits.append) == "ok"
    assert len(calls) == 5 and len(waits) == 4
    assert waits[-1] > waits[0]  # backoff: 0.05, 0.1, 0.2, 0.4 (each jittered x0.5..1.5)


def test_retry_passes_other_errors_through_at_once():
    calls = []

    def broken():
        calls.append(1)
        raise sqlite3.OperationalError("no such table: runs")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        with_retry(broken, "create_run", sleep=lambda s: None)
    assert calls == [1]


def test_retry_gives_up_after_its_budget():
    def locked():
        raise LOCKED

    t0 = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        with_retry(locked, "set_terminated", budget_s=0.5)
    assert 0.2 < time.monotonic() - t0 < 2.0


def test_retrying_client_wraps_every_method():
    class Client:
        tracking_uri = "sqlite:///x.db"
        n = 0

        def create_run(self, exp):
            self.n += 1
            if self.n == 1:
                raise LOCKED
            return f"run-in-{exp}"

    c = RetryingClient(Client())
    assert c.create_run("0") == "run-in-0" and c._client.n == 2
    assert c.tracking_uri == "sqlite:///x.db"
    assert is_locked(LOCKED) and not is_locked(ValueError("database is fine"))


def _trial_runs(db: Path, study: str) -> list[tuple[str, str]]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute("select r.run_uuid, r.status from runs r join tags s on s.run_uuid = r.run_uuid "
                               "and s.key = 'study' and s.value = ? join tags k on k.run_uuid = r.run_uuid and "
                               "k.key = 'ctxbench.kind' and k.value = 'trial'", (study,)).fetchall()
    except sqlite3.Error:
        return []


@pytest.mark.docker
def test_four_workers_lose_no_run_while_the_store_is_locked(tmp_path, docker_ready):
    study = f"sqlite4-{uuid.uuid4().hex[:6]}"
    db = tmp_path / "mlflow.db"
    proc = subprocess.Popen(study_cmd(study, ["hydra.launcher.n_jobs=4"]), cwd=ROOT, env=study_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 240
        while not _trial_runs(db, study):  # trials are starting: the workers are writing
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0][-3000:]
            time.sleep(0.2)
        with sqlite3.connect(db, timeout=60) as con:
            con.execute("BEGIN EXCLUSIVE")  # no reader, no writer: past MLflow's 20 s busy timeout
            time.sleep(24)
            con.rollback()
        out = proc.communicate(timeout=400)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out[-4000:]
    assert "database is locked (attempt" in out  # the lock did hit the workers, and they waited
    got = study_outcome(f"sqlite:///{db}", study)
    assert got.n_runs == 4 and len({t[0] for t in got.trials}) == 4  # each planned trial exactly once
    assert Counter(t[1] for t in got.trials) == {"FINISHED": 4}
    assert got.parent_status == "FINISHED" and got.parent_counts["trials_done"] == 4
    assert got.parent_counts["trials_crashed"] == 0 and got.parent_counts["trials_error"] == 0
