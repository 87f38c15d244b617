"""Many workers, one SQLite store: a write refused with "database is locked" is retried with
backoff (bench.tracking.retry), so no trial's run is lost or left RUNNING.

The study test attacks it: 4 joblib workers run a 4-trial study while the test holds an
EXCLUSIVE lock on the store for longer than MLflow's own busy timeout (20 s), so every write
the workers attempt meanwhile is refused by SQLite at least once (the session fixture
`joblib_study`, tests/helpers/studies.py: the launcher tests compare against it too)."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter

import pytest

from bench.tracking.retry import RetryingClient, is_locked, with_retry

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
    assert 0.2 < time.monotonic() - t0 < 10.0  # its 0.5 s budget, not the default 180 s


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


@pytest.mark.docker
@pytest.mark.timeout(900)  # the session's joblib study may be set up here: minutes on a loaded machine
def test_a_process_makes_one_client_per_store_and_a_forked_child_its_own(tmp_path):
    import os

    from bench.tracking import retry

    a, b = (f"sqlite:///{tmp_path / name}.db" for name in ("a", "b"))
    first = retry.client(a)
    assert retry.client(a) is first and retry.client(b) is not first
    assert first.tracking_uri == a and retry.client(b).tracking_uri == b
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child's client must not be the parent's (its store's pool is the parent's)
        os.write(write, b"1" if retry.client(a) is not first and retry.client(a) is retry.client(a) else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"


def test_four_workers_lose_no_run_while_the_store_is_locked(joblib_study):
    got, out = joblib_study.outcome, joblib_study.output
    assert "database is locked (attempt" in out  # the lock did hit the workers, and they waited
    assert got.n_runs == 4 and len({t[0] for t in got.trials}) == 4  # each planned trial exactly once
    assert Counter(t[1] for t in got.trials) == {"FINISHED": 4}
    assert got.parent_status == "FINISHED" and got.parent_counts["trials_done"] == 4
    assert got.parent_counts["trials_crashed"] == 0 and got.parent_counts["trials_error"] == 0
