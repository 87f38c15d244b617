"""A trial's start holds the host-wide claim lock only for the resume check and the run's creation:
its params are logged after it (every trial's start on the host waits for that lock)."""

from __future__ import annotations

import fcntl

import tasks
from bench.config import compose, load
from bench.tracking import budget
from bench.tracking.runs import TrialRun, flatten
from bench.trial import runner


def _held(path) -> bool:
    with open(path, "a") as f:  # another open file: flock sees the claim's lock as another holder's
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def test_params_are_logged_outside_the_claim_lock(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tcfg = load(compose([f"tracking.uri={uri}", f"results_dir={tmp_path}", f"tracking.artifact_root={tmp_path / 'a'}",
                         "study.name=claim", "sandbox=local"]))
    seen: list[bool] = []
    real = TrialRun.log_params

    def log_params(self: TrialRun) -> None:
        seen.append(_held(tmp_path / ".trials.lock"))
        real(self)

    monkeypatch.setattr(TrialRun, "log_params", log_params)
    gate = budget.Gate.for_trial(tcfg.resolved.get("study") or {}, tcfg.results_dir, tcfg.study)
    run = runner.claim(tcfg, tasks.generate(tcfg.task.family, tcfg.task.seed), gate)
    assert isinstance(run, TrialRun) and seen == [False]
    params = run.client.get_run(run.run_id).data.params
    assert params["strategy.name"] == tcfg.strategy["name"]
    assert len(params) == len(flatten(tcfg.resolved))  # all of them, still
