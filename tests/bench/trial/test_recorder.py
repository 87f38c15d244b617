"""bench/trial/record.py's Recorder: the one writer of a trial's events, subscribers after the log."""

from __future__ import annotations

import json

from bench.trial.record import Recorder
from ctxlog import events as ev


def test_subscribers_hear_every_event_after_it_is_written_and_cannot_fail_the_trial(tmp_path):
    rec = Recorder(tmp_path / "events.jsonl")
    heard: list[tuple[str, int]] = []

    def listener(event: ev.Event) -> None:  # the line is on disk when a subscriber hears of it
        heard.append((event.kind, len((tmp_path / "events.jsonl").read_text().splitlines())))

    def broken(event: ev.Event) -> None:
        raise RuntimeError("a tracing store that is down")

    rec.subscribers += [broken, listener]
    rec.append(ev.StepStatus(turn=0, step="s01", status="passed"))
    rec.append(ev.Drift(turn=1, drift_id="d1"))
    rec.close()
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in lines] == ["step_status", "drift"]
    assert heard == [("step_status", 1), ("drift", 2)]
