"""bench/perf/same_records.py, the before/after check of a harness change: the same four trials
run twice (the session's `both_ways` studies: joblib and the threads launcher, two results
folders, sandbox=local) compare equal, and a changed verdict, event or metric on one side is a
difference it names and exits 1 on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.perf import same_records
from tests.helpers.both_ways import BothWays


@pytest.fixture(scope="module")
def twice(both_ways: BothWays) -> tuple[Path, Path]:
    return both_ways.processes, both_ways.threads


def _client(results: Path):
    from mlflow.tracking import MlflowClient

    return MlflowClient(f"sqlite:///{results}/mlflow.db")


def _run(results: Path):
    """The first trial run of `results` (the others stay as they were)."""
    client = _client(results)
    exp = client.get_experiment_by_name("ctxbench")
    return client.search_runs([exp.experiment_id], filter_string="tags.`ctxbench.kind` = 'trial'")[0]


def test_two_runs_of_the_same_plan_are_equal(twice, capsys):
    before, after = twice
    assert same_records.main([str(before), str(after)]) == 0
    out = capsys.readouterr().out
    assert "before 4 trials, after 4, on both 4, equal 4" in out
    recs = same_records.records(before)
    assert all(
        r["status"] == "FINISHED" and r["events"] and r["history"]["prompt_tokens"] for r in recs.values()
    )


# Each change below is made to the `after` side in place (a copy would name another folder in
# every path-valued param) and undone, but for the metric's, which cannot be: it comes last.


def test_a_changed_verdict_is_a_difference(twice, capsys):
    before, after = twice
    run = _run(after)
    was = run.data.tags["status"]
    _client(after).set_tag(run.info.run_id, "status", "failure" if was == "success" else "success")
    try:
        assert same_records.main([str(before), str(after)]) == 1
    finally:
        _client(after).set_tag(run.info.run_id, "status", was)
    out = capsys.readouterr().out
    assert "equal 3" in out and f"tags.status: '{was}' != " in out
    assert same_records.main([str(before), str(after)]) == 0  # undone: equal again


def test_a_changed_event_is_a_difference(twice, capsys):
    before, after = twice
    (path, *_) = sorted((after / "trials").glob("*/events.jsonl"))
    text = path.read_text()
    lines = [json.loads(x) for x in text.splitlines()]
    turn = next(i for i, r in enumerate(lines) if r.get("turn") is not None and r["kind"] != "check_cached")
    lines[turn]["turn"] += 1
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    try:
        assert same_records.main([str(before), str(after)]) == 1
    finally:
        path.write_text(text)
    out = capsys.readouterr().out
    assert "equal 3" in out and f"events[{turn}]" in out


def test_a_trial_on_one_side_only_is_a_difference(twice, capsys):
    before, after = twice
    run = _run(after)
    _client(after).delete_run(run.info.run_id)  # a deleted run is not searched
    try:
        assert same_records.main([str(before), str(after)]) == 1
    finally:
        _client(after).restore_run(run.info.run_id)
    assert "1 on one side only" in capsys.readouterr().out


def test_a_changed_metric_is_a_difference(twice, capsys):
    before, after = twice
    # its latest value and history
    _client(after).log_metric(_run(after).info.run_id, "prompt_tokens", 1e9, step=10_000)
    assert same_records.main([str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert "equal 3" in out and "metrics.prompt_tokens:" in out and "history.prompt_tokens:" in out
