"""The same tiny study through the distributed launchers: Hydra's Ray launcher against a
local Ray instance, and the submitit launcher in its local mode (what SLURM runs, minus
SLURM). Both are optional extras; `hydra-ray-launcher` pins cloudpickle<3, so they may live in
a separate venv: point CTXBENCH_LAUNCHER_PYTHON at its python (docs/scaling.md). Skipped when
no such interpreter has the plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter

import pytest

from bench.config import ROOT

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _python_with(module: str) -> str:
    for py in (os.environ.get("CTXBENCH_LAUNCHER_PYTHON"), sys.executable):
        if py and subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0:
            return py
    pytest.skip(f"no interpreter with {module}; set CTXBENCH_LAUNCHER_PYTHON (docs/scaling.md)")


@pytest.mark.parametrize(("launcher", "plugin"), [
    ("ctxbench_ray", "hydra_plugins.hydra_ray_launcher.ray_launcher"),
    ("submitit_local", "hydra_plugins.hydra_submitit_launcher.submitit_launcher"),
])
def test_tiny_study_through_a_distributed_launcher(launcher, plugin, tmp_path, docker_ready):
    py = _python_with(plugin)
    study = f"{launcher}-{uuid.uuid4().hex[:6]}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a fresh local Ray instance
    env.update(CTXBENCH_RESULTS=str(tmp_path), RAY_AUTH_MODE="disabled")
    cmd = [py, "-m", "bench", "-m", "experiment=grid", f"hydra/launcher={launcher}", "strategy=raw,ledger",
           "arm=baseline", "task=signature_migration", "task.seed=0", "++task.size.steps=6",
           f"study.name={study}"]
    if launcher == "submitit_local":
        cmd += ["hydra.launcher.timeout_min=10", "hydra.launcher.cpus_per_task=1"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]

    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.get_experiment_by_name("ctxbench")
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.study = '{study}'")
    trials = [r for r in runs if r.data.tags["ctxbench.kind"] == "trial"]
    assert Counter(r.info.status for r in trials) == {"FINISHED": 2}
    (parent,) = [r for r in runs if r.data.tags["ctxbench.kind"] == "study"]
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in trials)
    assert parent.info.status == "FINISHED" and parent.data.metrics["trials_done"] == 2
    # The per-job callbacks ran where the trials ran (Ray workers / submitit job processes).
    (sweep,) = (tmp_path / "hydra" / "multirun" / study).iterdir()
    records = [json.loads(x) for x in (sweep / "progress.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["pid"] != r["launcher_pid"] for r in records)
    assert f"[study {study}] 2/2 (100%)" in out
