"""A trial's task as its MLflow dataset input: equal digests mean the same task, byte for byte;
any change to the task's content changes the digest; runs of one task share one dataset."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

import tasks
from bench.tracking.task_input import CONTEXT, content_sha256, log_task_input, task_dataset


def test_digest_is_the_content_same_task_same_digest_in_another_process():
    a = tasks.generate("signature_migration", 4)
    assert content_sha256(a) == content_sha256(tasks.generate("signature_migration", 4))
    code = (
        "import tasks; from bench.tracking.task_input import content_sha256; "
        "print(content_sha256(tasks.generate('signature_migration', 4)))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    ).stdout.strip()
    assert other == content_sha256(a)


def test_any_change_to_the_task_changes_the_digest():
    a = tasks.generate("signature_migration", 4)
    digests = {
        content_sha256(a),
        content_sha256(tasks.generate("signature_migration", 5)),
        content_sha256(tasks.generate("signature_migration", 4, steps=6)),
        content_sha256(tasks.generate("extract_module", 4)),
    }
    path, content = a.files[0]
    edited = dataclasses.replace(a, files=((path, content + " "), *a.files[1:]))  # one byte of one file
    digests.add(content_sha256(edited))
    digests.add(content_sha256(dataclasses.replace(a, final_check=a.final_check + " -x")))
    assert len(digests) == 6


def test_dataset_names_the_task_and_profiles_it():
    t = tasks.generate("config_rename", 2, steps=6)
    ds = task_dataset(t, {"steps": 6})
    profile = json.loads(ds.profile)
    assert ds.name == t.task_id == "config_rename/2/steps=6"
    assert ds.digest == profile["sha256"][:16] and len(profile["sha256"]) == 64
    assert profile["family"] == "config_rename" and profile["seed"] == 2 and profile["size"] == {"steps": 6}
    assert profile["files"] == len(t.files) and profile["steps"] == 6


@pytest.fixture()
def client(tmp_path):
    from mlflow.tracking import MlflowClient

    c = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    return c, c.create_experiment("t", artifact_location=(tmp_path / "a").as_uri())


def test_runs_of_one_task_share_its_dataset_and_show_its_digest(client):
    c, exp = client
    same, other = tasks.generate("signature_migration", 4), tasks.generate("signature_migration", 5)
    runs = [c.create_run(exp).info.run_id for _ in range(3)]
    for run_id, task in zip(runs, (same, same, other), strict=True):
        assert log_task_input(c, run_id, task, {})
    inputs = [c.get_run(r).inputs.dataset_inputs for r in runs]
    assert all(len(i) == 1 for i in inputs)
    (a,), (b,), (x,) = inputs
    assert (a.dataset.name, a.dataset.digest) == (b.dataset.name, b.dataset.digest)
    assert x.dataset.digest != a.dataset.digest and x.dataset.name == "signature_migration/5"
    assert {t.key: t.value for t in a.tags} == {"mlflow.data.context": CONTEXT}


def test_a_failure_to_log_the_input_never_fails_the_trial(caplog):
    class Broken:
        def log_inputs(self, run_id, datasets):
            raise RuntimeError("store unavailable")

    assert log_task_input(Broken(), "r", tasks.generate("signature_migration", 4), {}) is False
    assert "dataset input" in caplog.text
