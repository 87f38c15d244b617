import json

import pytest

from bench.core.types import Message
from bench.eventlog.writer import EventLog, comparable, ledger_records, line_sha
from ctxlog import events as ev
from ctxlog.reader import Log


def test_records_are_chained_flushed_and_never_overwritten(tmp_path):
    log = EventLog(tmp_path / "events.jsonl")
    log.append(ev.TrialStart(trial_id="abc", task_id="t/1", base_commit="b0"))
    log.append(ev.Drift(drift_id="d1", drift_kind="new_caller", commit="c1", message="m"))
    # flushed per record: readable before close
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0])["prev"] == ""
    assert json.loads(lines[1])["prev"] == line_sha(lines[0])
    assert [e.seq for e in Log.from_path(tmp_path / "events.jsonl").events] == [0, 1]
    with pytest.raises(FileExistsError):
        EventLog(tmp_path / "events.jsonl")
    with pytest.raises(ValueError, match="is not an event kind"):
        log.append(ev.Unknown(extra={"kind": "made_up"}))


def test_context_stores_each_message_once(tmp_path):
    log = EventLog(tmp_path / "e.jsonl")
    a, b = Message("system", "sys"), Message("user", "task")
    log.context(0, (a, b), tokens=10, stable=2)
    log.context(1, (a, b, Message("assistant", "hi")), tokens=12, stable=2)
    kinds = [r["kind"] for r in log.records]
    assert kinds == ["message", "message", "context", "message", "context"]
    assert log.records[-1]["messages"][:2] == log.records[2]["messages"]


def test_comparable_drops_only_volatile_fields(tmp_path):
    log = EventLog(tmp_path / "e.jsonl")
    rec = log.append(ev.ModelCall(turn=3, usage={"input": 1}, t={"latency_s": 0.5}))
    (clean,) = comparable([rec])
    assert "t" not in clean and "prev" not in clean and clean["usage"] == {"input": 1}


def test_ledger_record_derived_from_log(tmp_path):
    log = EventLog(tmp_path / "e.jsonl")
    log.append(ev.TrialStart(trial_id="tid", task_id="fam/1", base_commit="base"))
    log.append(ev.StepStart(step="s01", repo_commit="c1", dirty_files=["a.py"], new_session=False))
    log.context(0, (Message("user", "s01"),), tokens=3, stable=0)
    log.append(
        ev.ModelCall(
            turn=0,
            purpose="turn",
            model_id="sim",
            usage={"input": 10, "cache_read": 90, "cache_write": 5, "output": 3},
        )
    )
    log.append(ev.Check(turn=0, step="s01", exit_code=1))
    log.context(1, (Message("user", "summarise"),), tokens=3, stable=0, purpose="compaction")
    log.append(ev.ModelCall(turn=1, purpose="compaction", model_id="sim", usage={}))
    log.append(ev.Compaction(turn=1, tokens_before=100, tokens_after=10))
    log.context(1, (Message("user", "s01"),), tokens=3, stable=0)
    log.append(ev.ModelCall(turn=1, purpose="turn", model_id="sim", usage={"input": 4}))
    recs = ledger_records(log.records)
    assert len(recs) == 2  # the summariser call is not a turn
    first, second = recs
    assert first["repo_commit"] == "c1" and first["dirty_files"] == ["a.py"]
    assert first["cache_hit_tokens"] == 90 and first["cache_miss_tokens"] == 15
    assert first["constraint_check"] == "fail" and not first["compaction_triggered"]
    assert second["compaction_triggered"] and second["constraint_check"] is None
