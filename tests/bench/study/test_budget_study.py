"""A budgeted study stops at its budget and a rerun with a larger one resumes it, with exact
counts: joblib workers, the sim priced like a frontier model, sandbox=local."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bench.config import ROOT

SWEEP = [
    "strategy=raw,ledger",
    "arm=baseline,drift",
    "sandbox=local",
    "++task.size.steps=6",
    "hydra/launcher=ctxbench_joblib",
    "hydra.launcher.n_jobs=2",
    "study.name=budgeted",
]


def _study(tmp_path, *extra: str) -> tuple[str, dict]:
    env = {**os.environ, "CTXBENCH_RESULTS": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    env.pop("CTXBENCH_STUDY", None)
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "-m", *SWEEP, *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]  # a budget that runs out is a clean end
    sweeps = sorted((tmp_path / "hydra" / "multirun" / "budgeted").iterdir())
    return out, json.loads((sweeps[-1] / "study.json").read_text())


@pytest.mark.timeout(900)  # two studies (or one, paced) on a loaded machine: minutes
def test_a_budgeted_study_stops_then_resumes_with_a_larger_budget(tmp_path):
    # No estimate yet: the first trial runs alone as the pilot; it costs more than $0.000001, so
    # no other trial may start.
    out, first = _study(tmp_path, "study.budget_usd=0.000001")
    assert first["end"] == "budget_exhausted" and first["executed"] == 1
    assert first["counts"].get("budget_exhausted") == 3, first
    assert "3 not started (budget)" in out and "ended: budget_exhausted, 3 trial(s) not started" in out

    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.get_experiment_by_name("ctxbench")

    def trials():
        return client.search_runs(
            [exp.experiment_id], filter_string="tags.study = 'budgeted' and tags.`ctxbench.kind` = 'trial'"
        )

    (pilot,) = trials()
    spent = pilot.data.metrics["cost_usd"]
    assert pilot.info.status == "FINISHED" and spent > 0.000001

    out2, second = _study(tmp_path, "study.budget_usd=100")
    assert second["end"] == "complete" and second["executed"] == 3 and second["counts"].get("skipped") == 1
    assert f"spent ${spent:.4f} of $100.0000" in out2  # seeded from MLflow with the first invocation's spend
    runs = trials()
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    assert len({r.data.tags["config_hash"] for r in runs}) == 4  # one run per trial, none twice
    ledger = json.loads((tmp_path / "budget" / "budgeted.json").read_text())
    assert ledger["ended"] == 4 and ledger["reserved"] == {}
    assert abs(ledger["spent_usd"] - sum(r.data.metrics["cost_usd"] for r in runs)) < 1e-9
