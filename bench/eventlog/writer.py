"""The append-only, hash-chained event log of one trial (docs/design.md §6).

Every record: `seq`, `turn`, `kind`, `prev` (sha256 of the previous line, "" for the
first), kind-specific fields, and `t` (volatile timing: `ts`, latencies) kept apart so
that two runs of the same config can be compared byte for byte once `t` and `prev` are
stripped. Each record is flushed as it is written: a killed trial leaves a readable log.

Model-visible messages are stored once each (`message` records, content-addressed by
their sha); a `context` record lists the shas in order plus the context hash, so every
context can be rebuilt from the log alone without repeating the transcript every turn.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from bench.core.types import Message, canonical_json, context_sha
from ctxlog import blobs
from ctxlog import events as ev
from ctxlog.events import KINDS, SCHEMA  # noqa: F401  (the schema: ctxlog/events.py)
from ctxlog.reader import Log

# How much of a long text an event keeps. The model saw the whole text (its context is rebuilt
# from `message` records); these fields are for a reader of the log, who needs the end of a
# tool's output (where errors are) and the gist of a failure, while a trial's log stays small.
TOOL_OUTPUT_TAIL_CHARS = 4000  # tool_result.output: the last characters of what a tool returned
FAILURE_DETAIL_TAIL_CHARS = 300  # final_check_failed detail: the end of the final check's output
MODEL_ERROR_HEAD_CHARS = 200  # model_error detail: the start of the reply that ended in error/refusal
ERROR_DETAIL_CHARS = 500  # error.detail of a lost sandbox or a watchdog timeout
CRASH_DETAIL_CHARS = 2000  # error.detail of a provider error or a harness crash (type and message)


def line_sha(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()


class EventLog:
    def __init__(self, path: Path, blob_chars: int | None = None):
        """`blob_chars`: a string value longer than this is written once to `blobs/` beside the
        log and referenced from its record (ctxlog/blobs.py; the trial's is
        `tracking.blob_chars`); None keeps every value in its record."""
        self.path = path
        self.blob_chars = blob_chars
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("x", encoding="utf-8")  # never append to or overwrite an old log
        self._seq = 0
        self._prev = ""
        self._known: set[str] = set()
        self.records: list[
            dict[str, Any]
        ] = []  # kept in memory, large values in place, for metrics and RUN.md
        self._parsed: list[ev.Event] = []  # records[:len(_parsed)], parsed (`log`)
        self._log: Log | None = None

    def append(self, event: ev.Event) -> dict[str, Any]:
        """Write one event (a class of ctxlog/events.py); the writer adds seq, prev and `t.ts`."""
        if event.kind not in KINDS:
            raise ValueError(f"{type(event).__name__} is not an event kind of ctxlog/events.py")
        own = event.fields()
        record = {
            "seq": self._seq,
            "turn": event.turn,
            "kind": event.kind,
            "prev": self._prev,
            **own,
            "t": {"ts": round(time.time(), 6), **event.t},
        }
        stored, refs, texts = blobs.stash(own, self.blob_chars)
        line = canonical_json(record if not refs else {**record, **stored, blobs.KEY: refs})
        blobs.write(self.path.parent / blobs.DIR, texts)  # before the line that names them
        self._fh.write(line + "\n")
        self._fh.flush()
        self._seq += 1
        self._prev = line_sha(line)
        self.records.append(record)
        return record

    def context(
        self, turn: int, messages: tuple[Message, ...], tokens: int, stable: int, purpose: str = "turn"
    ) -> str:
        """Log a model-visible context: new messages first, then the list of their shas."""
        shas = []
        for m in messages:
            sha = m.sha()
            if sha not in self._known:
                self.append(ev.Message(turn=turn, sha=sha, message=m.to_dict()))
                self._known.add(sha)
            shas.append(sha)
        h = context_sha(messages)
        self.append(
            ev.Context(turn=turn, purpose=purpose, messages=shas, sha=h, tokens=tokens, stable=stable)
        )
        return h

    def log(self) -> Log:
        """The records as a ctxlog Log, for every reader of the trial (its tally, measures,
        RUN.md): the log is only appended to, so each record is parsed once, when first read."""
        if self._log is None or len(self._parsed) != len(self.records):
            self._parsed += [ev.parse(r) for r in self.records[len(self._parsed) :]]
            self._log = Log(self._parsed)
        return self._log

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records without volatile timing and the chain that hashes it (for determinism checks)."""
    return [{k: v for k, v in r.items() if k not in ("t", "prev")} for r in records]


def ledger_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-turn Context Ledger record, derived from the event log alone."""
    log = Log.from_records(records)
    start = log.start
    out: list[dict[str, Any]] = []
    repo_commit, dirty, session = start.base_commit, [], 0
    heads = iter(log.of(ev.StepStart))
    head = next(heads, None)
    for turn in log.turns():
        while head is not None and head.seq < turn.call.context.seq:
            repo_commit, dirty = head.repo_commit or repo_commit, head.dirty_files
            session += int(head.new_session)
            head = next(heads, None)
        reply = turn.call.reply
        if reply is None:
            continue
        checks = [e for e in turn.events if isinstance(e, ev.Check)]
        usage = reply.usage
        out.append(
            {
                "task_id": start.task_id,
                "session_id": f"{start.trial_id}/{session}",
                "turn_id": turn.index,
                "model_id": reply.model_id,
                "reasoning_effort": None,
                "repo_commit": repo_commit,
                "dirty_files": dirty,
                "cache_hit_tokens": usage.get("cache_read", 0),
                "cache_miss_tokens": usage.get("input", 0) + usage.get("cache_write", 0),
                "compaction_triggered": any(isinstance(e, ev.Compaction) for e in turn.events),
                # a check run in a turn is that turn's constraint check
                "constraint_check": ("pass" if _passed(checks[-1]) else "fail") if checks else None,
            }
        )
    return out


def _passed(c: ev.Check) -> bool:
    return bool(c.passed) if c.passed is not None else c.exit_code == 0  # early logs lack `passed`
