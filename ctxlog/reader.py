"""The one reader of an event log: its events, and its turns with the contexts the model saw.

Every reader of `events.jsonl` goes through `Log` -- the harness's verify and measures, the
analysis's trajectories, mismatch, diff pages and calibration -- so a context is rebuilt one
way: the `message` records (each logged once, by sha) in the order a `context` record lists.

    log = Log.from_path(path)            # or from_text(text), from_records(EventLog.records)
    log.events                           # typed events (ctxlog/events.py), in the order written
    for turn in log.turns():             # the model's acting turns
        turn.call.messages               # the context it was sent, rebuilt (dicts, as logged)
        turn.call.reply                  # its model_call
        turn.tools                       # (tool_call, tool_result) pairs

Reading is tolerant by default: a killed trial may end on a torn line, which is counted in
`unreadable`; `strict=True` raises instead, naming the line (verify wants that). A value stored
once in `blobs/` beside the log (ctxlog/blobs.py) is put back in its event; one that cannot be
(its blob missing, or not its sha's) stays a placeholder and is named in `blob_problems`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from ctxlog import blobs as blob_store
from ctxlog import events as ev

Fields = dict[str, Any]
E = TypeVar("E", bound=ev.Event)


@dataclass(frozen=True)
class Call:
    """A model call and the context it was sent."""

    context: ev.Context
    messages: tuple[Fields, ...] | None  # None when the log lacks one of its messages
    reply: ev.ModelCall | None  # None when no reply was logged (the provider refused, the trial died)


@dataclass(frozen=True)
class Turn:
    """One acting turn: the model's call (purpose `turn`), its tool calls, every event of its number."""

    index: int
    call: Call
    tools: tuple[tuple[ev.ToolCall, ev.ToolResult | None], ...]
    events: tuple[ev.Event, ...]


class Log:
    def __init__(
        self,
        events: Iterable[ev.Event],
        unreadable: int = 0,
        lines: tuple[str, ...] = (),
        blob_problems: tuple[str, ...] = (),
    ):
        self.events = list(events)  # in the order written (seq order)
        self.unreadable = unreadable
        self.lines = lines  # the raw lines, in file order (for the hash chain)
        self.blob_problems = blob_problems  # large values that could not be put back (verify reports them)

    # -- reading --------------------------------------------------------------------------
    @classmethod
    def from_records(cls, records: Iterable[Fields]) -> Log:
        return cls(ev.parse(r) for r in records)

    @classmethod
    def read(cls, source: Log | Iterable[Fields]) -> Log:
        """`source` itself when it is parsed already (one parse serves every reader of a trial's
        log: bench.eventlog.writer.EventLog.log), else its records parsed."""
        return source if isinstance(source, Log) else cls.from_records(source)

    @classmethod
    def from_text(
        cls,
        text: str,
        strict: bool = False,
        name: str = "events.jsonl",
        blobs: blob_store.Source | None = None,
    ) -> Log:
        """`blobs`: where the log's large values are (`blob_store.directory(folder / "blobs")`, or an
        MLflow run's artifacts); asked only when a record names one."""
        out, lines, bad = [], [], 0
        problems: list[str] = []
        cache: dict[str, tuple[str | None, bool]] = {}
        for n, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                if strict:
                    raise ValueError(f"{name}:{n}: not a JSON record ({getattr(exc, 'msg', exc)})") from exc
                bad += 1
                continue
            lines.append(line)
            if blob_store.KEY in rec:
                problems += blob_store.resolve(rec, blobs, cache)
            out.append(ev.parse(rec))
        return cls(out, bad, tuple(lines), tuple(problems))

    @classmethod
    def from_path(cls, path: Path, strict: bool = False) -> Log:
        return cls.from_text(
            path.read_text(encoding="utf-8", errors="replace"),
            strict,
            str(path),
            blob_store.directory(path.parent / blob_store.DIR),
        )

    # -- what it holds --------------------------------------------------------------------
    def of(self, *classes: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, classes)]

    def first(self, cls: type[E]) -> E | None:
        return next((e for e in self.events if isinstance(e, cls)), None)

    def last(self, cls: type[E]) -> E | None:
        return next((e for e in reversed(self.events) if isinstance(e, cls)), None)

    @cached_property
    def start(self) -> ev.TrialStart:
        return self.first(ev.TrialStart) or ev.TrialStart()

    @property
    def end(self) -> ev.TrialEnd | None:
        return self.last(ev.TrialEnd)

    @property
    def schema(self) -> int:
        return self.start.schema or 1  # version 1 wrote none

    @cached_property
    def messages(self) -> dict[str, Fields]:
        return {m.sha: m.message for m in self.of(ev.Message)}

    @cached_property
    def by_turn(self) -> dict[int, list[ev.Event]]:
        out: dict[int, list[ev.Event]] = {}
        for e in self.events:
            if e.turn is not None:
                out.setdefault(e.turn, []).append(e)
        return out

    # -- contexts and turns ---------------------------------------------------------------
    def rebuild(self, context: ev.Context) -> tuple[Fields, ...] | None:
        """The messages of a context, in order; None when one is missing from the log."""
        if any(s not in self.messages for s in context.messages):
            return None
        return tuple(self.messages[s] for s in context.messages)

    @cached_property
    def calls(self) -> list[Call]:
        """Every context the model was sent (turns and summariser calls), with its reply."""
        out: list[Call] = []
        pending: ev.Context | None = None
        for e in self.events:
            if isinstance(e, ev.Context):
                if pending is not None:
                    out.append(Call(pending, self.rebuild(pending), None))
                pending = e
            elif isinstance(e, ev.ModelCall) and pending is not None:
                out.append(Call(pending, self.rebuild(pending), e))
                pending = None
        if pending is not None:
            out.append(Call(pending, self.rebuild(pending), None))
        return out

    def turns(self) -> list[Turn]:
        """The acting turns, in order: each turn-purpose context with what followed it."""
        out = []
        for call in self.calls:
            if call.context.purpose != "turn" or call.context.turn is None:
                continue
            index = call.context.turn
            events = self.by_turn.get(index, [])
            results = {e.call_id: e for e in events if isinstance(e, ev.ToolResult)}
            tools = tuple((c, results.get(c.call_id)) for c in events if isinstance(c, ev.ToolCall))
            out.append(Turn(index, call, tools, tuple(events)))
        return out

    def context_at(self, turn: int) -> tuple[Fields, ...] | None:
        """The messages the model saw when it acted at `turn`: its last turn context at or before it."""
        found = None
        for call in self.calls:
            t = call.context.turn
            if call.context.purpose == "turn" and t is not None and t <= turn:
                found = call
        return found.messages if found is not None else None

    def records(self) -> list[Fields]:
        """The events as dicts (without `prev`), for readers that display fields they do not know."""
        return [e.record() for e in self.events]
