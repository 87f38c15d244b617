"""A trial's event log is parsed once for all its readers (bench.eventlog.writer.EventLog.log):
the tallies taken while it runs and at its end, the outcome measures, the error kinds, the
per-step curves and RUN.md each read the same parsed log, and what they record is what a
fresh parse of the records gives."""

from __future__ import annotations

from bench.eventlog.measures import step_curves, trial_measures
from bench.eventlog.tally import tally
from bench.eventlog.writer import EventLog
from bench.trial import record
from bench.trial.tidy_errors import error_kinds
from ctxlog import events as ev
from ctxlog.reader import Log
from tests.helpers.configs import trial_config
from tests.helpers.sim_world import make_task


class FakeRun:
    run_id = "r0"

    def finish(self, status, tags, final, per_turn, artifacts) -> None:
        self.status, self.tags, self.final, self.per_turn = status, tags, final, per_turn


def test_each_record_is_parsed_once_and_read_alike(tmp_path, monkeypatch):
    task = make_task()
    trial = record.Trial(trial_config("sandbox=local"), task, FakeRun())  # type: ignore[arg-type]
    trial.out_dir, trial.events = tmp_path, EventLog(tmp_path / "events.jsonl")
    trial.events.append(ev.TrialStart(trial_id="t", task_id=task.task_id, base_commit="b0"))
    for i in range(5):
        trial.events.append(ev.Drift(drift_id=f"d{i}", drift_kind="new_caller", commit=f"c{i}", message="m"))
        trial.tally()  # as the loop and the budget do while the trial runs
    parsed: list[str] = []
    real = ev.parse
    monkeypatch.setattr(ev, "parse", lambda r: parsed.append(r["kind"]) or real(r))
    trial.fail("step_failed", "s01")
    record.finish(trial)
    records = trial.events.records
    assert records[-1]["kind"] == "trial_end"
    assert len(parsed) == 1  # only trial_end was new: every other record was parsed while it ran
    monkeypatch.setattr(ev, "parse", real)
    fresh = Log.from_records(records)
    o = tally(records)
    assert trial.tally() == o and trial.events.log().events == fresh.events
    run = trial.run
    assert run.final == {
        **record.final_metrics(o, run.final["wall_s"]),
        **trial_measures(records),
        **error_kinds(task, records),
    }
    assert run.per_turn == step_curves(records, o.per_turn) and run.tags["status"] == "failure"
    assert "step_failed" in (tmp_path / "RUN.md").read_text()
