"""How a study's seeds were chosen travels with it: study.sample tags on the parent run and
on every trial run (the report's banner reads them)."""

from __future__ import annotations

import pytest

from bench.config import compose, load
from bench.tracking.runs import TrialRun
from bench.tracking.study_records import open_study_run


def _client(uri):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


@pytest.fixture
def where(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    return uri, [
        f"tracking.uri={uri}",
        f"results_dir={tmp_path}",
        f"tracking.artifact_root={tmp_path / 'art'}",
    ]


def test_demo_is_tagged_selected_on_parent_and_trial(where):
    uri, overrides = where
    cfg = compose(["experiment=demo", *overrides])
    parent = open_study_run(cfg, "demo", None)
    trial = TrialRun(load(compose(["experiment=demo", *overrides])), {})
    client = _client(uri)
    for run_id in (parent, trial.run_id):
        tags = client.get_run(run_id).data.tags
        assert tags["study.sample"] == "selected", run_id
        assert tags["study.sample_note"].startswith("One task seed (4), picked because")
    assert client.get_run(trial.run_id).data.tags["mlflow.parentRunId"] == parent


def test_a_plain_study_is_unbiased_and_a_trial_can_create_its_parent(where):
    uri, overrides = where
    trial = TrialRun(load(compose(["study.name=plain", *overrides])), {})
    client = _client(uri)
    tags = client.get_run(trial.run_id).data.tags
    parent = client.get_run(tags["mlflow.parentRunId"]).data.tags
    assert tags["study.sample"] == parent["study.sample"] == "unbiased"
    assert tags["study.sample_note"] == parent["study.sample_note"] == ""
