"""A run's large event-log values come back from its MLflow artifacts (analysis/load/artifacts.py)
and from its trial folder, for the diff, the report's pages and the calibration alike."""

from __future__ import annotations

import shutil

from analysis.calibrate.sources import _from_path
from analysis.diff.mismatch import read_log
from analysis.diff.trajectory import Trajectory
from analysis.load import run_blobs
from ctxlog import blobs
from ctxlog import events as ev
from tests.ctxlog.test_blobs import BIG, _trial


def _contents(log_or_events) -> list[str]:
    events = log_or_events.events if hasattr(log_or_events, "events") else log_or_events
    return [e.args["content"] for e in events if isinstance(e, ev.ToolCall)]


def test_a_trial_folder_and_its_artifacts_give_back_the_large_values(tmp_path):
    trial = tmp_path / "results" / "trials" / "t1"
    trial.mkdir(parents=True)
    _trial(trial / "events.jsonl")
    assert _contents(Trajectory.from_path(trial / "events.jsonl").events) == [BIG] * 3
    (calibrated,) = _from_path(trial / "events.jsonl")
    assert calibrated.log.blob_problems == () and calibrated.log.of(ev.ToolCall)[0].args["content"] == BIG
    artifacts = tmp_path / "artifacts"  # what MLflow's log_artifacts copies: the folder as it is
    shutil.copytree(trial, artifacts)
    text = (artifacts / "events.jsonl").read_text()
    assert _contents(read_log(text, run_blobs(str(artifacts)))) == [BIG] * 3
    assert _contents(read_log(text)) == [blobs.placeholder(blobs.sha_of(BIG), len(BIG))] * 3  # no source
    assert run_blobs(str(artifacts))("../events.jsonl") is None
