"""hydra/launcher=ctxbench_threads (many trials in flight in one process) against joblib (one
trial per worker process) on the same plan: the same verdicts, MLflow records and event logs,
all but timings; jobs run in threads of the launching process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.config import ROOT
from bench.perf.same_records import diff
from tests.helpers.both_ways import BothWays


@pytest.mark.timeout(900)  # two studies (or one, paced) on a loaded machine: minutes
def test_threads_and_processes_give_the_same_trials(both_ways: BothWays):
    assert "ctxbench threads launcher: 4 jobs, 4 in flight" in both_ways.threads_output
    a, b = both_ways.records  # verdicts, metrics, params, tags, histories, event logs; not timings
    assert len(a) == 4 and a.keys() == b.keys()
    for h in a:
        assert a[h] == b[h], (h, diff(a[h], b[h]))
    progress = [
        json.loads(x)
        for x in next((both_ways.threads / "hydra" / "multirun" / "both").iterdir())
        .joinpath("progress.jsonl")
        .read_text()
        .splitlines()
    ]
    assert {p["pid"] for p in progress} == {p["launcher_pid"] for p in progress}  # one process, four threads
    assert all(p["wall_s"] > 0.5 for p in progress)  # each job's own start, not another thread's


def test_chdir_is_refused_with_the_fix(tmp_path):
    env = {**os.environ, "CTXBENCH_RESULTS": str(tmp_path)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "-m",
            "sandbox=local",
            "hydra/launcher=ctxbench_threads",
            "hydra.job.chdir=true",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "set hydra.job.chdir=false" in proc.stdout + proc.stderr


@pytest.mark.parametrize("n", [0, -3, "many"])
def test_bad_n_jobs(n):
    from hydra_plugins.ctxbench_threads.launcher import ThreadsLauncher

    with pytest.raises(ValueError, match="hydra.launcher.n_jobs must be an integer >= 1"):
        ThreadsLauncher(n_jobs=n)  # type: ignore[arg-type]
