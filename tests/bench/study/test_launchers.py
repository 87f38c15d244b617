"""The same 4-trial study (2 strategies x 2 arms of one shrunk task) through three launchers:
joblib (local workers; the reference is the session's `joblib_study`, tests/bench/conftest.py),
Hydra's Ray launcher joining a Ray head the test starts on loopback (what a multi-node cluster
looks like to the driver), and the submitit launcher in its local mode (the SLURM path minus SLURM). Each must plan, run and judge exactly the same
trials: the same config hashes, statuses, verdicts and final trees, and the same counts in the
study's parent run (docs/scaling.md)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.helpers.studies import (
    RAY_LOCAL_ENV,
    Reference,
    StudyOutcome,
    ray_head,
    run_study,
    study_outcome,
)

# Whole studies through subprocesses: minutes on a loaded 2-core machine, past the 300 s default.
pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

N_TRIALS = 4


def _uri(results: Path) -> str:
    return f"sqlite:///{results}/mlflow.db"


def _check_workers(results: Path, study: str) -> None:
    """The per-job callbacks ran where the trials ran (workers, not the launching process)."""
    (sweep,) = (results / "hydra" / "multirun" / study).iterdir()
    records = [json.loads(x) for x in (sweep / "progress.jsonl").read_text().splitlines()]
    assert len(records) == N_TRIALS and all(r["pid"] != r["launcher_pid"] for r in records)
    assert {r["outcome"] for r in records} <= {"success", "failure"}


@pytest.fixture(scope="module")
def reference(joblib_study: Reference) -> StudyOutcome:
    """The joblib study (4 workers; conftest.py), with its own checks."""
    ref = joblib_study.outcome
    assert f"[study {joblib_study.study}] {N_TRIALS}/{N_TRIALS} (100%)" in joblib_study.output
    assert len({t[0] for t in ref.trials}) == N_TRIALS and ref.n_runs == N_TRIALS
    assert {t[1] for t in ref.trials} == {"FINISHED"} and ref.parent_status == "FINISHED"
    assert ref.parent_counts["trials_done"] == N_TRIALS
    _check_workers(joblib_study.results, joblib_study.study)
    return ref


def _same_as_reference(got: StudyOutcome, ref: StudyOutcome) -> None:
    assert got.n_runs == N_TRIALS
    assert got.trials == ref.trials  # hashes, statuses, verdicts and final trees
    assert got.parent_status == "FINISHED"
    keys = (
        "trials_planned",
        "trials_done",
        "trials_success",
        "trials_failure",
        "trials_error",
        "trials_crashed",
    )
    assert {k: got.parent_counts[k] for k in keys} == {k: ref.parent_counts[k] for k in keys}


def test_ray_cluster_runs_the_same_trials_as_joblib(reference: StudyOutcome, tmp_path: Path):
    study = f"ray-{uuid.uuid4().hex[:6]}"
    with ray_head(num_cpus=2) as address:
        out = run_study(
            study,
            tmp_path,
            ["hydra/launcher=ctxbench_ray"],
            env={**RAY_LOCAL_ENV, "RAY_ADDRESS": address},
        )
    assert f"[study {study}] {N_TRIALS}/{N_TRIALS} (100%)" in out
    _same_as_reference(study_outcome(_uri(tmp_path), study), reference)
    _check_workers(tmp_path, study)


def test_submitit_local_runs_the_same_trials_as_joblib(reference: StudyOutcome, tmp_path: Path):
    study = f"submitit-{uuid.uuid4().hex[:6]}"
    out = run_study(
        study,
        tmp_path,
        ["hydra/launcher=submitit_local", "hydra.launcher.timeout_min=10", "hydra.launcher.cpus_per_task=1"],
    )
    assert f"[study {study}] {N_TRIALS}/{N_TRIALS} (100%)" in out
    _same_as_reference(study_outcome(_uri(tmp_path), study), reference)
    _check_workers(tmp_path, study)
