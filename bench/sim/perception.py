"""What the simulated model can see: beliefs read from the model-visible messages only.

The sim gets nothing but the messages (a loopback server will later feed it real SDK
traffic), so everything here is parsed from text through `bench.core.render`'s parse functions
and plain string reading. Each perceived item carries its position (message index, char
offset, token offset) because recall depends on where a fact sits and how long the context
is, and "newer" means "later in the context".

A message's text is read in bench/sim/reading.py; here its readings are put in context order.
A trial resends its context every turn: a context that extends one perceived before costs only
its new messages (`perceive`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from bench.core import render
from bench.core.tokens import count_message
from bench.core.types import Message
from bench.sim.reading import parse, visible_text
from ctxlog import statements as said

EDIT_TOOLS = ("edit_file", "write_file", "delete_file")
_RESULT_RE = re.compile(r"^(?P<verb>wrote|edited|deleted) (?P<path>\S+)")
_TOUCHES_RE = re.compile(r"^Touches: (?P<paths>.*)$", re.M)
# How a compaction's output is headed, by the strategies and by the sim's own summariser.
SUMMARY_MARK = "SUMMARY OF EARLIER"


@dataclass(frozen=True)
class Pos:
    msg: int
    offset: int  # char offset in the message's visible text; (msg, offset) orders positions
    token: float  # token offset from the start of the context (for recall)

    def __lt__(self, other: Pos) -> bool:
        return (self.msg, self.offset) < (other.msg, other.offset)

    def __le__(self, other: Pos) -> bool:
        return (self.msg, self.offset) <= (other.msg, other.offset)


START = Pos(-1, 0, 0.0)


@dataclass(frozen=True)
class Seen:
    """One visible occurrence of a plan line (what a summary keeps of the plan)."""

    key: str  # "step:<id>"
    text: str
    pos: Pos
    in_task: bool  # inside the task message (stated prominently, not in passing)


@dataclass(frozen=True)
class Said:
    """One visible constraint statement (ctxlog/statements.py): a sentence with a keep cue."""

    text: str
    norm: str  # its content: restatements of the same words share it
    pos: Pos
    marked: bool  # an `[inv:ID] text` line
    role: str  # of the message it is in: system, user, assistant, tool
    in_task: bool  # in the task message
    in_summary: bool  # in a compaction summary: an unmarked one is the summariser's paraphrase


@dataclass(frozen=True)
class FileSeen:
    path: str
    sha: str
    content: str
    pos: Pos


@dataclass(frozen=True)
class CheckSeen:
    step: str
    passed: bool
    code: int | None
    pos: Pos
    output: str  # what follows the marker in its message: the failure text


@dataclass(frozen=True)
class CallSeen:
    id: str
    name: str
    args: dict[str, Any]
    pos: Pos


@dataclass(frozen=True)
class ResultSeen:
    call_id: str | None
    text: str
    pos: Pos


@dataclass
class Beliefs:
    task_id: str | None = None
    step: str | None = None  # the current step: the last CURRENT STEP header
    step_pos: Pos = START
    step_line: str = ""
    touches: tuple[str, ...] = ()  # the current step's "Touches:" line
    instructions: tuple[int, int, int] = (-1, 0, 0)  # (message, start, end) of its instruction line
    files: dict[str, list[FileSeen]] = field(default_factory=dict)  # every version, oldest first
    deleted: dict[str, Pos] = field(default_factory=dict)  # newest `deleted PATH` result
    facts: list[Seen] = field(default_factory=list)  # plan lines
    said: list[Said] = field(default_factory=list)
    checks: list[CheckSeen] = field(default_factory=list)
    calls: list[CallSeen] = field(default_factory=list)
    results: list[ResultSeen] = field(default_factory=list)
    drift: list[tuple[Pos, tuple[str, ...]]] = field(default_factory=list)
    texts: list[tuple[float, int, str]] = field(default_factory=list)  # (start token, tokens, text)
    task_msg: int = -1  # the message that names the task
    total_tokens: int = 0
    fresh_from: float = 0.0  # token offset from which content counts as just seen

    def newest(self, path: str) -> FileSeen | None:
        """The newest visible version of a file, unless a later result says it was deleted."""
        versions = self.files.get(path)
        if not versions:
            return None
        gone = self.deleted.get(path)
        return None if gone is not None and versions[-1].pos < gone else versions[-1]

    def perceived(self) -> dict[str, FileSeen]:
        out = {}
        for path in sorted(self.files):
            f = self.newest(path)
            if f is not None:
                out[path] = f
        return out

    def position(self, msg: int, offset: int) -> Pos:
        start, tokens, text = self.texts[msg]
        return Pos(msg, offset, start + tokens * (offset / max(len(text), 1)))

    def call(self, call_id: str | None) -> CallSeen | None:
        for c in reversed(self.calls):
            if c.id == call_id:
                return c
        return None


def _said(text: str) -> tuple[tuple[int, str], ...]:
    return tuple(said.statements(text))  # kept by ctxlog.statements, which the measures read too


def perceive(messages: tuple[Message, ...] | list[Message]) -> Beliefs:
    """The beliefs a context gives (`_KeptContexts.perceive`)."""
    return _KEPT.perceive(messages)


def _extendable(b: Beliefs) -> Beliefs:
    """A copy whose lists and dicts are its own (their items are frozen and shared)."""
    return replace(
        b,
        files={p: list(v) for p, v in b.files.items()},
        deleted=dict(b.deleted),
        facts=list(b.facts),
        said=list(b.said),
        checks=list(b.checks),
        calls=list(b.calls),
        results=list(b.results),
        drift=list(b.drift),
        texts=list(b.texts),
    )


def _take(b: Beliefs, i: int, m: Message) -> None:
    """What message `i` adds to the beliefs of the messages before it."""
    text = visible_text(m)
    start = b.texts[-1][0] + b.texts[-1][1] if b.texts else 0.0
    b.texts.append((start, count_message(m), text))
    p = parse(text)
    if p.task_id and b.task_id is None:
        b.task_id, b.task_msg = p.task_id, i
    if p.step:
        b.step, b.step_pos = p.step, b.position(i, p.step_offset)
        block = text[p.step_offset :]
        b.step_line = block.split("\n", 1)[0]
        first = p.step_offset + len(b.step_line) + 1
        end = text.find("\n", first)
        b.instructions = (i, first, end if end >= 0 else len(text))
        touched = _TOUCHES_RE.search(block)
        b.touches = tuple(x.strip() for x in touched.group("paths").split(",")) if touched else ()
    words = said.words(m.content, ((c.name, c.args) for c in m.tool_calls))
    summary = SUMMARY_MARK in m.content
    in_task = i == b.task_msg
    for off, sentence in _said(words):
        at = off if off < len(m.content) else max(text.find(sentence), 0)
        b.said.append(
            Said(
                sentence,
                said.normal(sentence),
                b.position(i, at),
                said.marked(sentence),
                m.role,
                in_task,
                summary,
            )
        )
    for off, sid, title in p.plan:
        b.facts.append(Seen(f"step:{sid}", title, b.position(i, off), in_task))
    for off, path, sha, content in p.files:
        b.files.setdefault(path, []).append(FileSeen(path, sha, content, b.position(i, off)))
    for off, sid, passed, code, out in p.checks:
        b.checks.append(CheckSeen(sid, passed, code, b.position(i, off), out))
    if p.drift_paths:
        b.drift.append((b.position(i, p.drift_paths[0]), p.drift_paths[1]))
    for c in m.tool_calls:
        b.calls.append(CallSeen(c.id, c.name, dict(c.args), b.position(i, 0)))
    if m.role == "tool":
        b.results.append(ResultSeen(m.tool_call_id, m.content, b.position(i, 0)))
        committed = _committed_path(b.call(m.tool_call_id))
        if committed and not m.content.startswith(("ERROR", "fatal:")):
            # `git show HEAD:path` prints the last committed copy: a version of the file like a read.
            content = "" if m.content == "(no output)" else m.content
            b.files.setdefault(committed, []).append(
                FileSeen(committed, render.content_sha(content), content, b.position(i, 0))
            )
        verb = _RESULT_RE.match(m.content)
        if verb and verb.group("verb") == "deleted":
            b.deleted[verb.group("path")] = b.position(i, 0)


class _KeptContexts:
    """The beliefs of the last contexts perceived in this process, newest last. One per trial
    in flight is what is used; past `KEPT_CONTEXTS` trials in flight in one process, the oldest
    is dropped and a trial whose context was dropped reads it whole once more (slower, the
    same beliefs). Equal messages match, not only the same objects: a context rebuilt from
    the same text (a loopback server's request) perceives the same."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: list[tuple[tuple[Message, ...], Beliefs]] = []
        self._lock = threading.Lock()

    def perceive(self, messages: tuple[Message, ...] | list[Message]) -> Beliefs:
        """The beliefs a context gives. A message's contribution depends only on it and the
        messages before it, so a context that starts with one perceived before extends a copy of
        that one's beliefs: a trial resends its whole context every turn, and reading it
        all again was most of the sim's time. The readers of Beliefs (action, explore, recall,
        summary) never change them: a kept context's beliefs are the ones handed out."""
        messages = tuple(messages)
        kept = self.longest_prefix(messages)
        b = Beliefs() if kept is None else _extendable(kept)
        for i in range(len(b.texts), len(messages)):
            _take(b, i, messages[i])
        b.total_tokens = int(b.texts[-1][0] + b.texts[-1][1]) if b.texts else 0
        # Just seen: the results of the model's own last calls, and the last `recent_tokens`.
        trailing = len(messages)
        while trailing > 0 and messages[trailing - 1].role == "tool":
            trailing -= 1
        b.fresh_from = b.texts[trailing][0] if trailing < len(messages) else float(b.total_tokens)
        self.put(messages, b)
        return b

    def longest_prefix(self, messages: tuple[Message, ...]) -> Beliefs | None:
        with self._lock:
            entries = list(self._entries)
        best: tuple[tuple[Message, ...], Beliefs] | None = None
        for entry in entries:
            kept, n = entry[0], len(entry[0])
            if n > len(messages) or (best is not None and n <= len(best[0])):
                continue
            # the last message first: another trial's context, or an earlier branch, fails there at once
            if n and _same(kept[-1], messages[n - 1]) and all(map(_same, kept, messages[:n])):
                best = entry
        return None if best is None else best[1]

    def put(self, messages: tuple[Message, ...], b: Beliefs) -> None:
        with self._lock:
            self._entries.append((messages, b))
            del self._entries[: max(len(self._entries) - self.size, 0)]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _same(a: Message, c: Message) -> bool:
    return a is c or a == c


KEPT_CONTEXTS = 32
_KEPT = _KeptContexts(KEPT_CONTEXTS)


def _committed_path(call: CallSeen | None) -> str | None:
    """The path of a `git show HEAD:<path>` call."""
    if call is None or call.name != "git" or call.args.get("subcommand") != "show":
        return None
    args = call.args.get("args") or []
    return (
        args[0][5:] if len(args) == 1 and isinstance(args[0], str) and args[0].startswith("HEAD:") else None
    )


def result_error(r: ResultSeen) -> bool:
    return r.text.lstrip().startswith("ERROR")
