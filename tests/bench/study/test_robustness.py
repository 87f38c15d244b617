"""Robustness of a long study: a trial stuck inside one call is ended by the watchdog; a hung
engine call is timed out and retried once; a crashing trial does not stop the study;
progress is counted per job (done/total, failures, ETA)."""

from __future__ import annotations

import logging
import math
import os
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from bench.study.callback import StudyCallback
from bench.study.progress import planned_jobs, progress_line, summarize
from bench.trial.watchdog import Watchdog, timeout_exception

# ---------------------------------------------------------------------------- the watchdog


def test_watchdog_interrupts_a_blocking_call_in_the_main_thread():
    exc = timeout_exception()
    t0 = time.monotonic()
    with pytest.raises(exc) as info, Watchdog(0.3, exc) as dog:
        time.sleep(30)  # a blocking syscall: SIGALRM interrupts it
    assert dog.fired and time.monotonic() - t0 < 15  # not the 30 s sleep
    assert info.value.reason == "timeout"


def test_watchdog_disarmed_never_fires_and_restores_an_earlier_timer():
    fired = []
    prev = signal.signal(signal.SIGALRM, lambda *a: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.8)  # e.g. pytest-timeout's own alarm
        with Watchdog(0.2, timeout_exception()):
            pass
        time.sleep(0.4)  # past the watchdog's deadline: nothing happens
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0  # the earlier timer is back
        time.sleep(0.6)
        assert fired == [1]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, prev)


def test_watchdog_outside_the_main_thread_uses_an_async_exception():
    exc = timeout_exception()
    seen: list[BaseException] = []

    def trial():
        try:
            with Watchdog(0.3, exc):
                while True:  # Python code: the async exception lands at the next bytecode
                    time.sleep(0.01)
        except BaseException as e:  # noqa: BLE001
            seen.append(e)

    t = threading.Thread(target=trial)
    t.start()
    t.join(10)
    assert not t.is_alive() and isinstance(seen[0], exc)


class _Hangs:
    """A provider whose second call never returns (a hung HTTP request, say)."""

    def __init__(self, inner):
        self.inner, self.model_id, self.calls = inner, inner.model_id, 0

    def complete(self, *a, **kw):
        self.calls += 1
        if self.calls == 2:
            time.sleep(3600)
        return self.inner.complete(*a, **kw)

    def close(self):
        self.inner.close()


@pytest.mark.docker
def test_trial_stuck_inside_a_model_call_is_ended_as_timeout_and_cleaned_up(
    tmp_path, monkeypatch, docker_ready
):
    import bench.providers as providers
    import bench.trial.watchdog
    from bench.config import compose, load
    from bench.trial.runner import run

    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    monkeypatch.setattr(bench.trial.watchdog, "WATCHDOG_GRACE_S", 0.5)
    real = providers.make_provider
    monkeypatch.setattr(providers, "make_provider", lambda cfg: _Hangs(real(cfg)))
    tcfg = load(
        compose(
            [
                "++task.size.steps=6",
                "model=oracle",
                "limits.trial_timeout_s=4",
                f"study.name=wd-{uuid.uuid4().hex[:6]}",
            ]
        )
    )
    t0 = time.monotonic()
    result = run(tcfg)
    took = time.monotonic() - t0
    assert (result.status, result.failure_reason) == ("failure", "timeout")
    assert took < 60
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tcfg.tracking.uri)
    mrun = client.get_run(result.run_id)
    # The wall budget is the agent's (bench/core/outcomes.py): a verdict, not an exclusion.
    assert mrun.info.status == "FINISHED" and mrun.data.tags["failure_reason"] == "timeout"
    import subprocess

    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=ctxbench.run_id={result.run_id}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert left.strip() == ""
    kinds = [
        line
        for line in result.events_path.read_text().splitlines()
        if '"kind":"trial_end"' in line or '"kind": "trial_end"' in line
    ]
    assert kinds, "the event log is closed with trial_end"


# ------------------------------------------------------------------ hung engine calls


class _StallFirst:
    """A unix-socket proxy in front of the Docker engine whose FIRST connection is accepted and
    never answered (a hung engine call); later connections are forwarded byte for byte."""

    def __init__(self, path: str, target: str = "/var/run/docker.sock"):
        self.path, self.target, self.connections = path, target, 0
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(8)
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.srv.accept()
            except OSError:
                return
            self.connections += 1
            if self.connections == 1:
                self.held.append(conn)  # swallow the request, answer nothing
                continue
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            up.connect(self.target)
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.srv.close()
        for c in self.held:
            c.close()


@pytest.mark.docker
def test_a_hung_exec_start_is_timed_out_and_retried_once(
    sandbox_cfg, monkeypatch, tmp_path, caplog, docker_ready
):
    import bench.sandbox.engine as E
    from bench.sandbox import create

    if E._unix_socket_path() != "/var/run/docker.sock":
        pytest.skip("needs the local unix-socket engine")
    sb = create(sandbox_cfg, {"a.py": "x = 1\n"}, f"hang-{uuid.uuid4().hex[:6]}")
    proxy = _StallFirst(str(tmp_path / "engine.sock"))
    try:
        monkeypatch.setattr(E, "ENGINE_TIMEOUT_S", 1.0)  # the exec stream opens in engine.py
        sb._sock_path = proxy.path  # the exec stream goes through the proxy
        t0 = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="bench.sandbox.docker"):
            res = sb.exec("echo ran; cat a.py")
        assert res.exit_code == 0 and res.output == "ran\nx = 1\n"
        assert proxy.connections == 2 and 1.0 <= time.monotonic() - t0 < 10
        assert "hung" in caplog.text and "retrying once" in caplog.text
    finally:
        proxy.close()
        sb.close()


class _FlakyApi:
    """Wraps docker-py's APIClient; the named call times out `n` times (the engine hung)."""

    def __init__(self, api, name, n):
        self._api, self._name, self._left = api, name, n

    def __getattr__(self, attr):
        real = getattr(self._api, attr)
        if attr != self._name:
            return real

        def call(*a, **kw):
            if self._left > 0:
                import requests

                self._left -= 1
                raise requests.exceptions.ReadTimeout(
                    "UnixHTTPConnectionPool: Read timed out. (read timeout=30)"
                )
            return real(*a, **kw)

        return call


@pytest.mark.docker
@pytest.mark.parametrize(("name", "hangs_to_lose"), [("exec_create", 3), ("exec_inspect", 2)])
def test_a_hung_engine_call_is_retried_once_then_the_sandbox_is_lost(
    sandbox_cfg, name, hangs_to_lose, docker_ready
):
    from bench.sandbox import SandboxLost, create

    sb = create(sandbox_cfg, {"a.py": "x = 1\n"}, f"flaky-{uuid.uuid4().hex[:6]}")
    real = sb._api
    try:
        sb._api = _FlakyApi(real, name, 1)
        assert sb.exec("true").exit_code == 0  # one hang: retried, fine
        # Hung again on the retry (for exec_create the kill of the first attempt hangs too):
        # the sandbox is lost, an infra failure the trial reports and a resume reruns.
        sb._api = _FlakyApi(real, name, hangs_to_lose)
        with pytest.raises(SandboxLost):
            sb.exec("true")
    finally:
        sb._api = real
        sb.close()


def test_the_engine_client_has_a_finite_timeout(docker_ready):
    from bench.sandbox.engine import ENGINE_TIMEOUT_S, _client

    assert _client().api.timeout == int(ENGINE_TIMEOUT_S) <= 60


# ---------------------------------------------------------------- progress and crashes


def test_planned_jobs_counts_the_grid_and_a_command_line_slice():
    from hydra import compose, initialize_config_dir

    from bench.config import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        full = compose("config", overrides=["experiment=grid"], return_hydra_config=True)
        from hydra.core.global_hydra import GlobalHydra
        from hydra.types import RunMode

        part = GlobalHydra.instance().hydra.compose_config(  # what `python -m bench -m ...` composes
            "config",
            ["experiment=grid", "task=config_rename", "task.seed=0,1", "rep=0,1"],
            run_mode=RunMode.MULTIRUN,
        )
    assert len(planned_jobs(full) or []) == 4 * 4 * 3 * 10
    jobs = planned_jobs(part) or []
    assert len(jobs) == 4 * 4 * 2 * 2 and all("task=config_rename" in j for j in jobs)


def test_progress_counts_outcomes_once_per_job_and_estimates_the_rest():
    recs = [
        {"job": 0, "outcome": "skipped"},
        {"job": 1, "outcome": "success"},
        {"job": 2, "outcome": "failure"},
        {"job": 3, "outcome": "crashed"},
        {"job": 4, "outcome": "error"},
        {"job": 4, "outcome": "success"},
    ]  # job 4 retried by the launcher
    s = summarize(recs, total=10, elapsed_s=40.0)
    assert s["done"] == 5 and s["executed"] == 4
    assert s["counts"] == {"skipped": 1, "success": 2, "failure": 1, "crashed": 1}
    assert s["eta_s"] == pytest.approx(5 / (4 / 40.0))
    line = progress_line("grid", s)
    assert (
        "5/10 (50%) done: 2 ok, 1 failed, 0 infra errors, 1 crashed, 1 skipped" in line and "ETA 50s" in line
    )


def test_a_crashed_job_is_recorded_and_does_not_stop_the_study(tmp_path):
    from hydra.core.utils import JobReturn, JobStatus
    from omegaconf import OmegaConf

    cb = StudyCallback()
    cb.study, cb.total, cb.started_wall = "t", 2, time.time()
    cb.progress_path = str(tmp_path / "progress.jsonl")
    cfg = OmegaConf.create({"hydra": {"job": {"num": 0}}})
    ret = JobReturn(overrides=["task.seed=7"], status=JobStatus.FAILED)
    ret.return_value = ValueError("task generation exploded for seed 7")
    cb.on_job_start(cfg)
    cb.on_job_end(cfg, job_return=ret)
    assert ret.status == JobStatus.COMPLETED and math.isnan(ret.return_value)  # Hydra won't raise on it
    (rec,) = [__import__("json").loads(x) for x in Path(cb.progress_path).read_text().splitlines()]
    assert rec["outcome"] == "crashed" and "seed 7" in rec["error"] and rec["pid"] == os.getpid()
    cfg_end = OmegaConf.create({"tracking": {"uri": "sqlite:///x"}})
    with pytest.raises(SystemExit, match="1 trial\\(s\\) crashed"):  # the study still ends non-zero
        cb.on_multirun_end(cfg_end)


# ------------------------------------------------------------- RUNNING runs of other processes


def test_running_runs_are_judged_dead_by_pid_or_by_age_and_a_live_one_is_not_started_twice(
    tmp_path, monkeypatch
):
    """A RUNNING run on this host whose pid is dead, or on any host older than the trial timeout
    plus grace (the watchdog ends every trial by then), is marked KILLED and rerun; a RUNNING run
    of a live process is left alone and the trial is skipped, not started a second time."""
    from mlflow.tracking import MlflowClient

    from bench.config import compose, load
    from bench.tracking.runs import STALE_GRACE_S, experiment_id, previous_runs
    from bench.trial.runner import run

    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    tcfg = load(compose([f"study.name=stale-{uuid.uuid4().hex[:6]}", "limits.trial_timeout_s=60"]))
    client = MlflowClient(tcfg.tracking.uri)
    exp = experiment_id(client, tcfg.tracking.experiment, tcfg.tracking.artifact_root)
    here = os.uname().nodename
    dead = __import__("subprocess").Popen(["true"])
    dead.wait()
    now_ms = int(time.time() * 1000)

    def running(host: str, pid: int, age_s: float) -> str:
        tags = {
            "ctxbench.kind": "trial",
            "study": tcfg.study,
            "config_hash": tcfg.config_hash,
            "host": host,
            "pid": str(pid),
            "status": "running",
        }
        return client.create_run(exp, start_time=now_ms - int(age_s * 1000), tags=tags).info.run_id

    dead_here = running(here, dead.pid, 1)
    stale_elsewhere = running("another-host", 1, 60 + STALE_GRACE_S + 5)
    live_elsewhere = running("another-host", 1, 5)
    status = {r.info.run_id: r.info.status for r in previous_runs(tcfg)}
    assert status == {dead_here: "KILLED", stale_elsewhere: "KILLED", live_elsewhere: "RUNNING"}

    result = run(tcfg)  # the live one is someone else's: skipped, no second run
    assert result.skipped and result.status == "running" and result.run_id == live_elsewhere
    assert len(client.search_runs([exp], filter_string=f"tags.study = '{tcfg.study}'")) == 3


@pytest.mark.docker
def test_in_a_real_multirun_a_crashing_trial_does_not_stop_the_others(tmp_path, docker_ready):
    """steps=7 with callers=1 is invalid only together (bench.preflight checks each swept value,
    not every combination), so that job fails config validation inside the job (a crash, not
    a verdict): the other trials still run and finish, and the study exits non-zero naming it."""
    import subprocess
    import sys

    from bench.config import ROOT

    study = f"crash-{uuid.uuid4().hex[:6]}"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "-m",
            "experiment=grid",
            "strategy=ledger",
            "arm=baseline",
            "task=signature_migration",
            "task.seed=0",
            "++task.size.steps=6,7",
            "++task.size.callers=2,1",
            f"study.name={study}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "CTXBENCH_RESULTS": str(tmp_path)},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "1 trial(s) crashed" in out and "task.size.callers=1" in out
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.get_experiment_by_name("ctxbench")
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.study = '{study}'")
    kinds = sorted((r.data.tags["ctxbench.kind"], r.info.status) for r in runs)
    assert kinds == [("study", "FAILED")] + [("trial", "FINISHED")] * 3
