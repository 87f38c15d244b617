"""bench/perf/same_records.py, the before/after check of a harness change: the same four trials
run twice (the session's `both_ways` studies: joblib and the threads launcher, two results
folders, sandbox=local) compare equal, and a changed verdict, event or metric on one side is a
difference it names and exits 1 on."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from bench.perf import same_records
from tests.helpers.both_ways import BothWays


@pytest.fixture(scope="module")
def twice(both_ways: BothWays) -> tuple[Path, Path]:
    return both_ways.processes, both_ways.threads


@contextlib.contextmanager
def changed_for_a_moment(after: Path) -> Iterator[None]:
    """Each change below is made to the `after` side in place (a copy would name another folder in
    every path-valued param), and undone: its store is put back from a snapshot taken through
    SQLite's backup API. The session's one `both_ways` (tests/helpers/once.py) is read by tests on
    other xdist workers meanwhile: they wait on the same lock."""
    db = after / "mlflow.db"
    with FileLock(str(after / "changed.lock")), contextlib.closing(sqlite3.connect(":memory:")) as kept:
        with contextlib.closing(sqlite3.connect(db)) as live:
            live.backup(kept)
        try:
            yield
        finally:
            with contextlib.closing(sqlite3.connect(db)) as live:
                kept.backup(live)


def _compare(before: Path, after: Path) -> int:
    with FileLock(str(after / "changed.lock")):
        return same_records.main([str(before), str(after)])


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
    assert _compare(before, after) == 0
    out = capsys.readouterr().out
    assert "before 4 trials, after 4, on both 4, equal 4" in out
    recs = same_records.records(before)
    assert all(
        r["status"] == "FINISHED" and r["events"] and r["history"]["prompt_tokens"] for r in recs.values()
    )


def test_a_changed_verdict_is_a_difference(twice, capsys):
    before, after = twice
    with changed_for_a_moment(after):
        run = _run(after)
        was = run.data.tags["status"]
        _client(after).set_tag(run.info.run_id, "status", "failure" if was == "success" else "success")
        assert same_records.main([str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert "equal 3" in out and f"tags.status: '{was}' != " in out
    assert _compare(before, after) == 0  # undone: equal again


def test_a_changed_event_is_a_difference(twice, capsys):
    before, after = twice
    (path, *_) = sorted((after / "trials").glob("*/events.jsonl"))
    with changed_for_a_moment(after):
        text = path.read_text()
        lines = [json.loads(x) for x in text.splitlines()]
        turn = next(
            i for i, r in enumerate(lines) if r.get("turn") is not None and r["kind"] != "check_cached"
        )
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
    with changed_for_a_moment(after):
        _client(after).delete_run(_run(after).info.run_id)  # a deleted run is not searched
        assert same_records.main([str(before), str(after)]) == 1
    assert "1 on one side only" in capsys.readouterr().out


def test_a_changed_metric_is_a_difference(twice, capsys):
    before, after = twice
    with changed_for_a_moment(after):  # its latest value and history: MLflow has no undo for it
        _client(after).log_metric(_run(after).info.run_id, "prompt_tokens", 1e9, step=10_000)
        assert same_records.main([str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert "equal 3" in out and "metrics.prompt_tokens:" in out and "history.prompt_tokens:" in out
    assert _compare(before, after) == 0  # put back from the snapshot: equal again
