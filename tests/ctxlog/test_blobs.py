"""A large value is stored once, by reference (ctxlog/blobs.py, docs/design.md §6): the writer
puts it in `blobs/<sha256>` once however often it is logged, the one reader puts it back, and
`verify` names a missing or altered blob; a value the model sends that looks like a reference
stays text."""

from __future__ import annotations

import json

from bench.core.toolspecs import TOOLS
from bench.core.types import Message, ToolCall, request_hash
from bench.eventlog.verify import verify
from bench.eventlog.writer import EventLog
from ctxlog import blobs
from ctxlog import events as ev
from ctxlog.reader import Log

BIG = "y = 1\n" * 20_000  # 120,000 characters
LIMIT = 100_000


def _trial(path, limit=LIMIT, turns=3, value=BIG):
    """A log where the model writes `value` every turn: its model_call, tool_call and message."""
    log = EventLog(path, limit)
    log.append(ev.TrialStart(seed=7, max_output=100, schema=ev.SCHEMA))
    ctx: tuple[Message, ...] = (Message("system", "sys"), Message("user", "task"))
    for turn in range(turns):
        log.context(turn, ctx, tokens=5, stable=2)
        call = ToolCall(f"c{turn}", "write_file", {"path": "big.py", "content": value})
        log.append(
            ev.ModelCall(
                turn=turn,
                request_hash=request_hash(ctx, TOOLS, 100, 7),
                tool_calls=[{"id": call.id, "name": call.name, "args": call.args}],
            )
        )
        log.append(ev.ToolCall(turn=turn, call_id=call.id, name=call.name, args=call.args))
        ctx = ctx + (
            Message("assistant", "", tool_calls=(call,)),
            Message("tool", "ok", tool_call_id=call.id),
        )
    log.append(ev.TrialEnd(turn=turns, success=True))
    log.close()
    return log


def test_a_large_value_logged_every_turn_is_stored_once(tmp_path):
    path = tmp_path / "events.jsonl"
    written = _trial(path)
    (blob,) = (tmp_path / "blobs").iterdir()
    assert blob.name == blobs.sha_of(BIG) and blob.read_text() == BIG
    assert path.stat().st_size < len(BIG)  # 3 turns x 3 copies inline would be 1 MB
    read = Log.from_path(path, strict=True)
    assert read.blob_problems == ()
    assert [e.args for e in read.of(ev.ToolCall)] == [{"path": "big.py", "content": BIG}] * 3
    assert read.records() == Log.from_records(written.records).records()  # as the writer held them
    assert verify(path) == (3, [])


def test_an_ordinary_record_is_written_as_before(tmp_path):
    with_blobs, without = _trial(tmp_path / "a" / "events.jsonl", value="short"), None
    without = _trial(tmp_path / "b" / "events.jsonl", limit=None, value="short")
    strip = [{k: v for k, v in r.items() if k not in ("t", "prev")} for r in with_blobs.records]
    assert strip == [{k: v for k, v in r.items() if k not in ("t", "prev")} for r in without.records]
    assert not (tmp_path / "a" / "blobs").exists()
    assert "blobs" not in (tmp_path / "a" / "events.jsonl").read_text()


def test_a_missing_or_altered_blob_is_a_problem_of_verify(tmp_path):
    path = tmp_path / "events.jsonl"
    _trial(path)
    blob = tmp_path / "blobs" / blobs.sha_of(BIG)
    blob.write_text(BIG.replace("y", "z", 1))
    _, problems = verify(path)
    # model_call and tool_call of 3 turns, the message of 2 (the last is in no context yet)
    assert sum(": blob " in p and "does not match its sha" in p for p in problems) == 8
    assert Log.from_path(path).of(ev.ToolCall)[0].args["content"] == blobs.placeholder(
        blobs.sha_of(BIG), len(BIG)
    )
    blob.unlink()
    _, problems = verify(path)
    assert sum("is missing" in p for p in problems) == 8


def test_a_placeholder_the_model_sends_is_only_text(tmp_path):
    """The reference is in the writer's envelope, never in a value: a model that sends a
    placeholder (of a blob that exists, even) gets back its own text."""
    path = tmp_path / "events.jsonl"
    _trial(path)
    forged = blobs.placeholder(blobs.sha_of(BIG), len(BIG))
    log = EventLog(tmp_path / "second" / "events.jsonl", LIMIT)
    (tmp_path / "second" / "blobs").mkdir()
    (tmp_path / "second" / "blobs" / blobs.sha_of(BIG)).write_text(BIG)
    log.append(
        ev.ToolCall(
            turn=0,
            call_id="c",
            name="write_file",
            args={"path": "a.py", "content": forged, "blobs": [{"at": ["args"], "sha": "x"}]},
        )
    )
    log.close()
    (call,) = Log.from_path(log.path, strict=True).of(ev.ToolCall)
    assert call.args["content"] == forged and call.args["blobs"] == [{"at": ["args"], "sha": "x"}]


def test_a_reference_out_of_its_folder_or_to_no_placeholder_is_refused(tmp_path):
    path = tmp_path / "events.jsonl"
    _trial(path, turns=1)
    lines = path.read_text().splitlines()
    rec = json.loads(lines[-2])  # the tool_call
    rec["blobs"] = [
        {"at": ["args", "path"], "sha": blobs.sha_of(BIG)},
        {"at": ["args"], "sha": "../../etc/passwd"},
    ]
    log = Log.from_text(json.dumps(rec), blobs=blobs.directory(tmp_path / "blobs"))
    assert len(log.blob_problems) == 2 and log.of(ev.ToolCall)[0].args["path"] == "big.py"


def test_a_value_with_a_lone_surrogate_stays_in_its_record(tmp_path):
    """(What the model sends is carried before it is logged; a file's undecodable name is not.)"""
    log = EventLog(tmp_path / "events.jsonl", LIMIT)
    log.append(ev.ToolResult(turn=0, call_id="c", name="run", output=BIG + "\udc80"))
    log.close()
    assert not (tmp_path / "blobs").exists()
    assert Log.from_path(log.path).of(ev.ToolResult)[0].output == BIG + "\udc80"
