"""`arm.drift_kinds`, the drift ablation: only the listed kinds of drift land, and with none the
drift arm's effect disappears (the trial matches the baseline arm's). Whole trials of the
oracle through the real config with the local sandbox, shrunk to a short task."""

from __future__ import annotations

import pytest

from bench.config import ConfigError, compose, load
from bench.trial.runner import run
from ctxlog.reader import Log

SHORT = [
    "task=signature_migration",
    "task.seed=3",
    "task.size.steps=7",
    "model=oracle",
    "strategy=raw",
    "sandbox=local",
]


def _trial(tmp_path, monkeypatch, *overrides: str):
    # One results folder (one MLflow store) for the four trials: a new store costs seconds, and
    # the four configs differ (arm, drift_kinds), so none resumes or skips another.
    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    result = run(load(compose([*SHORT, *overrides])))
    assert result.status == "success", result.failure_reason
    return [r for r in Log.from_path(result.events_path).records()]


def _actions(records):
    return [(r["name"], r["args"]) for r in records if r["kind"] == "tool_call"]


def test_only_the_listed_kinds_land_and_none_means_no_drift(tmp_path, monkeypatch):
    every = _trial(tmp_path, monkeypatch, "arm=drift")
    assert {r["drift_kind"] for r in every if r["kind"] == "drift"} >= {
        "changed_value",
        "new_caller",
        "new_trap",
    }
    some = _trial(tmp_path, monkeypatch, "arm=drift", "arm.drift_kinds=[changed_value]")
    assert [r["drift_kind"] for r in some if r["kind"] == "drift"] == ["changed_value"]
    none = _trial(tmp_path, monkeypatch, "arm=drift", "arm.drift_kinds=[]")
    baseline = _trial(tmp_path, monkeypatch, "arm=baseline")
    assert not [r for r in none if r["kind"] == "drift"]
    assert _actions(none) == _actions(baseline) != _actions(every)


def test_unknown_kind_is_a_clear_error():
    with pytest.raises(ConfigError, match="arm.drift_kinds: unknown kind 'stale_edit'"):
        load(compose([*SHORT, "arm=drift", "arm.drift_kinds=[stale_edit]"]))
