"""A model is provider + model id + endpoint (issue 21, defect 6): two servers behind one
`model=local` are two models in the tags, the plan, the config hash and so the report."""

from __future__ import annotations

from bench.config import compose, load
from bench.core.identity import model_identity


def test_two_endpoints_of_one_model_group_are_two_models():
    a = load(compose(["model=local", "model.model_id=qwen3", "model.base_url=http://127.0.0.1:8000/v1"]))
    b = load(compose(["model=local", "model.model_id=qwen3", "model.base_url=http://10.0.0.7:8000/v1"]))
    c = load(compose(["model=local", "model.model_id=llama3", "model.base_url=http://127.0.0.1:8000/v1"]))
    ids = {model_identity(x.model) for x in (a, b, c)}
    assert ids == {"local:qwen3@127.0.0.1:8000", "local:qwen3@10.0.0.7:8000", "local:llama3@127.0.0.1:8000"}
    assert len({a.config_hash, b.config_hash, c.config_hash}) == 3


def test_the_sim_keeps_its_name_and_a_vendor_its_model_id():
    assert model_identity(load(compose([])).model) == "sim"
    assert model_identity(load(compose(["model=oracle"])).model) == "oracle"
    assert model_identity(load(compose(["model=anthropic"])).model) == "anthropic:claude-sonnet-5-5"


def test_the_trial_run_is_tagged_with_the_identity(tmp_path, monkeypatch):
    """What the analysis groups and de-duplicates by (the `model` tag) is the identity."""
    from bench.tracking.runs import TrialRun

    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    cfg = load(compose(["model=smollm2", "model.base_url=http://127.0.0.1:9999/v1"]))
    run = TrialRun(cfg, {})
    tags = run.client.get_run(run.run_id).data.tags
    assert tags["model"] == "smollm2:smollm2-135m-instruct@127.0.0.1:9999"
    assert (tags["model_name"], tags["model_id"], tags["model_endpoint"]) == (
        "smollm2",
        "smollm2-135m-instruct",
        "http://127.0.0.1:9999/v1",
    )


def test_a_single_trial_does_not_leave_its_study_run_running(tmp_path, monkeypatch):
    """Issue 21, defect 8: the study's parent run stayed RUNNING after single (non-multirun) trials."""
    from bench.tracking.runs import TrialRun

    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    run = TrialRun(load(compose(["study.name=single-trials"])), {})
    parent = run.client.get_run(run.client.get_run(run.run_id).data.tags["mlflow.parentRunId"])
    assert parent.info.status == "FINISHED"
    again = TrialRun(load(compose(["study.name=single-trials", "rep=1"])), {})
    assert run.client.get_run(again.run_id).data.tags["mlflow.parentRunId"] == parent.info.run_id
