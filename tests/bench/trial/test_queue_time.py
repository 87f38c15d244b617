"""Time a call spent queueing (the shared rate limiter, a concurrency slot) and its retried
attempts reach the trial's record: per call in the event log's timings, per trial as metrics,
and never inside the latency the provider is measured by; and the CPU each call cost the
trial's own thread."""

from __future__ import annotations

import dataclasses
import threading
import time

from bench.providers.scripted import ScriptedProvider
from tests.bench.trial.conftest import SOLVE, kinds, mlflow_run


def test_queue_time_and_retries_per_call_and_per_trial(scripted_trial, monkeypatch):
    real = ScriptedProvider.complete

    def queued(self, *a, **k):  # as bench/providers/http/transport.py reports them
        c = real(self, *a, **k)
        return dataclasses.replace(c, extra={**c.extra, "queue_s": 0.25, "attempts": 3})

    monkeypatch.setattr(ScriptedProvider, "complete", queued)
    result, tcfg = scripted_trial(SOLVE)
    calls = kinds(result.events_path, "model_call")
    assert len(calls) >= 2 and all(c["t"]["queue_s"] == 0.25 for c in calls)
    metrics = mlflow_run(tcfg, result.run_id).data.metrics
    assert metrics["queue_ms"] == 250 * len(calls) and metrics["provider_retries"] == 2 * len(calls)
    assert metrics["latency_s"] < 0.25 * len(calls)  # provider time only


def test_a_provider_that_reports_nothing_queued_counts_zero(scripted_trial):
    result, tcfg = scripted_trial(SOLVE)
    metrics = mlflow_run(tcfg, result.run_id).data.metrics
    assert metrics["queue_ms"] == 0 and metrics["provider_retries"] == 0


def test_time_queued_does_not_count_against_the_trials_limit(scripted_trial, monkeypatch):
    # Each call waits 3 s for the study's allowance, past the trial's 5 s limit in all:
    # queueing is the study's schedule (bench/core/queued.py), not the trial's wall clock.
    from bench.core import queued

    real = ScriptedProvider.complete

    def waits(self, *a, **k):
        with queued.waiting():
            time.sleep(3)
        return real(self, *a, **k)

    monkeypatch.setattr(ScriptedProvider, "complete", waits)
    look = [
        [{"name": "read_file", "args": {"path": "calc.py"}}]
    ] * 2  # two turns more: the limit is checked at each
    result, _ = scripted_trial(look + SOLVE, "limits.trial_timeout_s=5")
    assert len(kinds(result.events_path, "model_call")) == 4 and result.status == "success", result


def _spin(cpu_s: float) -> None:
    start = time.thread_time()
    while time.thread_time() - start < cpu_s:
        pass


def test_a_calls_cpu_is_its_own_threads_and_not_its_waits(scripted_trial, monkeypatch):
    # Each call spins 0.05 s of its own CPU, then waits while another thread of the process spins
    # 0.25 s: what the call logs is the first alone (trials share a process under the threads
    # launcher, and a wait for the provider costs nothing).
    real = ScriptedProvider.complete

    def busy(self, *a, **k):
        _spin(0.05)
        other = threading.Thread(target=_spin, args=(0.25,))
        other.start()
        other.join()
        return real(self, *a, **k)

    monkeypatch.setattr(ScriptedProvider, "complete", busy)
    result, _ = scripted_trial(SOLVE)
    calls = kinds(result.events_path, "model_call")
    assert len(calls) >= 2 and all(0.05 <= c["t"]["cpu_s"] < 0.2 for c in calls), [c["t"] for c in calls]
