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
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.core.types import Message, canonical_json, context_sha

KINDS = frozenset({
    "trial_start", "message", "context", "model_call", "tool_call", "tool_result", "check", "step_start",
    "head_refresh",
    "step_status", "compaction", "context_truncation", "context_overflow", "output_truncation", "drift",
    "policy_violation", "invariant", "error", "trial_end", "tool_error", "process_killed", "check_cached",
    "tidy_up",
})


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
    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = path.open("x", encoding="utf-8")  # never append to or overwrite an old log
        self._seq = 0
        self._prev = ""
        self._known: set[str] = set()
        self.records: list[dict[str, Any]] = []  # kept in memory for metrics and RUN.md

    def append(self, kind: str, turn: int, t: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        if kind not in KINDS:
            raise ValueError(f"unknown event kind {kind!r}")
        record = {"seq": self._seq, "turn": turn, "kind": kind, "prev": self._prev, **fields,
                  "t": {"ts": round(time.time(), 6), **(t or {})}}
        line = canonical_json(record)
        self._fh.write(line + "\n")
        self._fh.flush()
        self._seq += 1
        self._prev = line_sha(line)
        self.records.append(record)
        return record

    def context(self, turn: int, messages: tuple[Message, ...], tokens: int, stable: int,
                purpose: str = "turn") -> str:
        """Log a model-visible context: new messages first, then the list of their shas."""
        shas = []
        for m in messages:
            sha = m.sha()
            if sha not in self._known:
                self.append("message", turn, sha=sha, message=m.to_dict())
                self._known.add(sha)
            shas.append(sha)
        h = context_sha(messages)
        self.append("context", turn, purpose=purpose, messages=shas, sha=h, tokens=tokens, stable=stable)
        return h

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def read(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(raw line, record) pairs; raises ValueError naming the line that is not JSON."""
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            try:
                yield line, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not a JSON record ({exc.msg})") from exc


def comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records without volatile timing and the chain that hashes it (for determinism checks)."""
    return [{k: v for k, v in r.items() if k not in ("t", "prev")} for r in records]


def ledger_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-turn Context Ledger record, derived from the event log alone."""
    start = next((r for r in records if r["kind"] == "trial_start"), {})
    out: list[dict[str, Any]] = []
    repo_commit = start.get("base_commit", "")
    dirty: list[str] = []
    compacted: set[int] = set()
    last_check: dict[int, str] = {}
    session = 0
    for r in records:
        kind, turn = r["kind"], r["turn"]
        if kind == "step_start":
            repo_commit, dirty = r.get("repo_commit", repo_commit), r.get("dirty_files", [])
            session += int(r.get("new_session", False))
        elif kind == "compaction":
            compacted.add(turn)
        elif kind == "check":
            last_check[turn] = "pass" if r.get("passed", r.get("exit_code") == 0) else "fail"
        elif kind == "model_call" and r.get("purpose", "turn") == "turn":
            usage = r.get("usage", {})
            out.append({
                "task_id": start.get("task_id", ""), "session_id": f"{start.get('trial_id', '')}/{session}",
                "turn_id": turn, "model_id": r.get("model_id", ""), "reasoning_effort": None,
                "repo_commit": repo_commit, "dirty_files": dirty,
                "cache_hit_tokens": usage.get("cache_read", 0),
                "cache_miss_tokens": usage.get("input", 0) + usage.get("cache_write", 0),
                "compaction_triggered": turn in compacted, "constraint_check": None,
            })
    for rec in out:  # a check run in a turn is that turn's constraint check
        rec["constraint_check"] = last_check.get(rec["turn_id"])
    return out
