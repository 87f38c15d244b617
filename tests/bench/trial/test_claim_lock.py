"""A trial's claim (bench/tracking/runs.py `trial_claim`): a lock per config hash, held only for the
resume check and the run's creation. Two processes claiming the same config at once start it
once; trials of different configs never wait for each other's claim; params are logged after."""

from __future__ import annotations

import fcntl
import multiprocessing
import threading
import time

import tasks
from bench.config import TrialConfig, compose, load
from bench.tracking import study_budget as budget
from bench.tracking.runs import TrialRun, flatten, trial_claim
from bench.trial import runner


def _cfg(tmp_path, *over: str) -> TrialConfig:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return load(
        compose(
            [
                f"tracking.uri={uri}",
                f"results_dir={tmp_path}",
                f"tracking.artifact_root={tmp_path / 'a'}",
                "study.name=claim",
                "sandbox=local",
                *over,
            ]
        )
    )


def _claim(tcfg: TrialConfig):
    gate = budget.Gate.for_trial(tcfg.resolved.get("study") or {}, tcfg.results_dir, tcfg.study)
    return runner.claim(tcfg, tasks.generate(tcfg.task.family, tcfg.task.seed), gate)


def _held(path) -> bool:
    with open(path, "a") as f:  # another open file: flock sees the claim's lock as another holder's
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def test_params_are_logged_outside_the_claim_lock(tmp_path, monkeypatch):
    tcfg = _cfg(tmp_path)
    seen: list[bool] = []
    real = TrialRun.log_params

    def log_params(self: TrialRun) -> None:
        seen.append(_held(tmp_path / ".claims" / f"{tcfg.config_hash}.lock"))
        real(self)

    monkeypatch.setattr(TrialRun, "log_params", log_params)
    run = _claim(tcfg)
    assert isinstance(run, TrialRun) and seen == [False]
    params = run.client.get_run(run.run_id).data.params
    assert params["strategy.name"] == tcfg.strategy["name"]
    assert len(params) == len(flatten(tcfg.resolved))  # all of them, still


def _claimer(tcfg: TrialConfig, ready, done, out) -> None:
    """A process claiming `tcfg` as soon as the other one is ready too; it stays alive (its run
    RUNNING, its pid live) until both have decided, as a trial that is playing would."""
    slow = runner.previous_runs

    def previous_runs(c: TrialConfig) -> list:  # widen the check-then-create window: a race shows
        found = slow(c)
        time.sleep(0.5)
        return found

    runner.previous_runs = previous_runs
    ready.wait()
    got = _claim(tcfg)
    out.put((got.run_id, isinstance(got, TrialRun), getattr(got, "status", "")))
    done.wait()


def test_two_processes_claiming_the_same_config_at_once_start_it_once(tmp_path):
    """The attack: two invocations of one study start the same trial at the same instant.
    Without the lock both find no earlier run and both create one (fails with `trial_claim`
    made a no-op)."""
    tcfg = _cfg(tmp_path)
    ctx = multiprocessing.get_context("fork")
    ready, done, out = ctx.Barrier(2), ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(tcfg, ready, done, out)) for _ in range(2)]
    for p in procs:
        p.start()
    try:
        got = sorted((out.get(timeout=120), out.get(timeout=120)), key=lambda g: not g[1])
    finally:
        done.wait(timeout=60)
        for p in procs:
            p.join(timeout=60)
    (first_id, first_new, _), (second_id, second_new, second_status) = got
    assert first_new and not second_new  # exactly one started it ...
    assert second_status == "running" and second_id == first_id  # ... the other saw it running
    from mlflow.tracking import MlflowClient

    runs = MlflowClient(tcfg.tracking.uri).search_runs(
        [MlflowClient(tcfg.tracking.uri).get_experiment_by_name(tcfg.tracking.experiment).experiment_id],
        filter_string=f"tags.config_hash = '{tcfg.config_hash}' and tags.`ctxbench.kind` = 'trial'",
    )
    assert [r.info.run_id for r in runs] == [first_id]


def _blocks(tcfg: TrialConfig, config_hash: str) -> bool:
    """Whether taking `config_hash`'s claim waits while another holder has it."""
    took = threading.Event()

    def take() -> None:
        with trial_claim(tcfg.results_dir, config_hash):
            took.set()

    t = threading.Thread(target=take, daemon=True)
    t.start()
    blocked = not took.wait(2.0)
    return blocked


def test_a_claim_waits_only_for_its_own_config(tmp_path):
    """One host-wide lock made 128 trials in flight start one by one (bench/perf/claims.py):
    a claim held for one config must not hold up another's (fails with one lock for all)."""
    tcfg = _cfg(tmp_path)
    other = _cfg(tmp_path, "task.seed=1")
    assert other.config_hash != tcfg.config_hash
    with trial_claim(tcfg.results_dir, tcfg.config_hash):  # this thread holds it; another thread waits
        assert _blocks(tcfg, tcfg.config_hash)
        assert not _blocks(tcfg, other.config_hash)


def test_a_process_claims_at_most_a_few_trials_at_once(tmp_path, monkeypatch):
    """128 threads claiming together waited past the 30 s timeout of the process's MLflow
    connection pool (bench/perf/claims.py): claims in progress are bounded per process
    (fails without the bound: all 8 at once)."""
    from bench.tracking import runs

    cfgs = [_cfg(tmp_path, f"task.seed={i}") for i in range(2 * runs.CLAIMS_PER_PROCESS)]
    now, peak, lock = [0], [0], threading.Lock()
    real = runner.previous_runs

    def previous_runs(c: TrialConfig) -> list:
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.3)
        with lock:
            now[0] -= 1
        return real(c)

    monkeypatch.setattr(runner, "previous_runs", previous_runs)
    threads = [threading.Thread(target=_claim, args=(c,)) for c in cfgs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert peak[0] == runs.CLAIMS_PER_PROCESS
