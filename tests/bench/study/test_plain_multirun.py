"""Every multirun is a study (no `experiment=`, no `study.name`): a derived name, a parent run
holding the plan, progress from the joblib workers read from each job's return value, and a
rerun of the same command that resumes it. Host only (sandbox=local); the SIGKILL variant
with Docker containers is in test_resume_kill.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

from bench.config import ROOT

SWEEP = [
    "strategy=raw,ledger",
    "sandbox=local",
    "++task.size.steps=6",
    "hydra/launcher=ctxbench_joblib",
    "hydra.launcher.n_jobs=2",
]


def _bench(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def test_a_plain_multirun_is_a_study_and_the_same_command_resumes_it(tmp_path):
    env = {**os.environ, "CTXBENCH_RESULTS": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    env.pop("CTXBENCH_STUDY", None)
    first = _bench(["-m", *SWEEP], env)
    out = first.stdout + first.stderr
    assert first.returncode == 0, out[-3000:]
    names = set(re.findall(r"\[study (adhoc-[0-9a-f]{8})\]", out))
    assert len(names) == 1, names
    (study,) = names
    assert f"[study {study}] 2/2 (100%) finished" in out

    from mlflow.tracking import MlflowClient

    from bench.tracking.study_records import read_plan, status

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("ctxbench")
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.study = '{study}'")
    (parent,) = [r for r in runs if r.data.tags["ctxbench.kind"] == "study"]
    trials = [r for r in runs if r.data.tags["ctxbench.kind"] == "trial"]
    assert len(trials) == 2 and all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in trials)
    plan = read_plan(client, parent.info.run_id)
    assert plan is not None and parent.data.tags["n_trials"] == "2"
    # The plan's hashes, computed at multirun start, are the ones the trials recorded themselves.
    assert sorted(t["config_hash"] for t in plan["trials"]) == sorted(
        r.data.tags["config_hash"] for r in trials
    )
    assert {(t["strategy"], t["task_seed"]) for t in plan["trials"]} == {("raw", 0), ("ledger", 0)}

    # Each job's outcome came back from the joblib worker that ran it, through its return value.
    sweeps = sorted((tmp_path / "hydra" / "multirun" / study).iterdir())
    recs = [json.loads(x) for x in (sweeps[-1] / "progress.jsonl").read_text().splitlines()]
    by_run = {r.info.run_id: r.data.tags["status"] for r in trials}
    assert {rec["run_id"]: rec["outcome"] for rec in recs} == by_run
    assert all(rec["pid"] != rec["launcher_pid"] for rec in recs)

    second = _bench(["-m", *reversed(SWEEP)], env)  # the same trials, spelled in another order
    out2 = second.stdout + second.stderr
    assert second.returncode == 0, out2[-3000:]
    assert (
        f"[study {study}] 2/2 (100%) finished: 0 ok, 0 failed, 0 infra errors, 0 crashed, 2 skipped" in out2
    )
    s = status(study, uri)
    assert s["plan"] == {
        "planned": 2,
        "finished": 2,
        "excluded": 0,
        "missing": 0,
        "unplanned_finished": 0,
        "invalid_jobs": 0,
        "invocations": 2,
    }
    assert s["by_status"] == {"FINISHED": 2} and s["double_counted"] == []
    replan = read_plan(client, parent.info.run_id)
    assert replan is not None and [t["invocations"] for t in replan["trials"]] == [[0, 1], [0, 1]]
    assert Counter(
        r.data.tags["ctxbench.kind"]
        for r in client.search_runs([exp.experiment_id], filter_string=f"tags.study = '{study}'")
    ) == {"trial": 2, "study": 1}


def test_a_single_run_keeps_its_failure_with_the_study_callback_on(tmp_path):
    env = {**os.environ, "CTXBENCH_RESULTS": str(tmp_path)}
    env.pop("CTXBENCH_STUDY", None)
    proc = _bench(["sandbox=local", "task.seed=-1"], env)
    assert proc.returncode != 0 and "task.seed" in proc.stdout + proc.stderr
    assert not (tmp_path / "hydra" / "multirun").exists()
