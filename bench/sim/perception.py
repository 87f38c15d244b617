"""What the simulated model can see: beliefs read from the model-visible messages only.

The sim gets nothing but the messages (a loopback server will later feed it real SDK
traffic), so everything here is parsed from text through `bench.core.render`'s parse functions
and plain string reading. Each perceived item carries its position (message index, char
offset, token offset) because recall depends on where a fact sits and how long the context
is, and "newer" means "later in the context".

Parsing is cached per message text: a trial resends the same messages every turn, so only
the newest ones cost anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from bench.core import render
from bench.core.tokens import count_message
from bench.core.types import Message
from ctxlog import statements as said

EDIT_TOOLS = ("edit_file", "write_file", "delete_file")
# A step line of a plan, as render.step_line writes it (render has no parse function for it).
_PLAN_RE = re.compile(r"^\[step:(?P<id>[A-Za-z0-9_.-]+)\] (?P<title>.+)$", re.M)
# Repo-relative paths named in failure or git output. An extension list keeps `os.path` or
# `e.g.` from being taken for files; the look-behind skips absolute paths (site-packages).
_PATH_RE = re.compile(r"(?<![\w/.-])((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*"
                      r"\.(?:py|pyi|cfg|toml|ini|txt|json|ya?ml|md|rst|js|ts|go|rs|c|h|sh))(?![\w/])")
# What a moved repository looks like in text: a harness consistency/drift note ("the repository
# changed ... by commits not yours"), git log/show output of someone else's commit.
_DRIFT_RE = re.compile(r"(?im)\bdrift\b|CONSISTENCY NOTE|commits? not yours|outside commit|HEAD moved"
                       r"|^commit [0-9a-f]{7,40}\b|^Author: ")
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


def visible_text(m: Message) -> str:
    """The text a model reads in a message: content, then its tool calls' argument strings,
    one per line (a model sees its own earlier submit_step notes and invariants)."""
    parts = [m.content]
    for c in m.tool_calls:
        for v in c.args.values():
            if isinstance(v, str):
                parts.append(v)
            elif isinstance(v, list):
                parts.extend(x for x in v if isinstance(x, str))
    return "\n".join(parts)


@dataclass(frozen=True)
class _Parsed:
    task_id: str | None
    step: str | None
    step_offset: int
    plan: tuple[tuple[int, str, str], ...]
    files: tuple[tuple[int, str, str, str], ...]  # (offset, path, sha, content)
    checks: tuple[tuple[int, str, bool, int | None, str], ...]
    drift_paths: tuple[int, tuple[str, ...]] | None


def _locate(text: str, needle: str, start: int) -> int:
    i = text.find(needle, start)
    return i if i >= 0 else start


@lru_cache(maxsize=8192)
def _parse(text: str) -> _Parsed:
    files, off = [], 0
    for path, sha, content in render.parse_file_blocks(text):
        off = _locate(text, f'<file path="{path}" sha="{sha}">', off)
        files.append((off, path, sha, content))
    checks, off = [], 0
    found = render.parse_check_results(text)
    for i, (sid, passed, code) in enumerate(found):
        head = f"[check:{sid} passed]" if passed else f"[check:{sid} failed" + (
            f" exit={code}]" if code is not None else "]")
        off = _locate(text, head, off)
        end = text.find("[check:", off + len(head)) if i + 1 < len(found) else -1
        checks.append((off, sid, passed, code, text[off + len(head):end if end >= 0 else None].strip()))
    step = render.parse_current_step(text)
    step_off = text.rfind(f"CURRENT STEP [step:{step}]") if step else -1
    plan = tuple((m.start(), m.group("id"), m.group("title")) for m in _PLAN_RE.finditer(text))
    drift = None
    bare = re.sub(r"<file path=.*?</file>", "", text, flags=re.S)  # drift is read outside file bodies
    cue = _DRIFT_RE.search(bare)
    if cue:
        paths = tuple(dict.fromkeys(_PATH_RE.findall(bare)))
        drift = (_locate(text, cue.group(0), 0), paths)
    return _Parsed(render.parse_task_id(text), step, step_off, plan, tuple(files),
                   tuple(checks), drift)


def named_paths(text: str, limit: int) -> list[str]:
    """Repo-relative file paths named in a piece of output, first mention first."""
    return list(dict.fromkeys(_PATH_RE.findall(text)))[:limit]


def perceive(messages: tuple[Message, ...] | list[Message]) -> Beliefs:
    b = Beliefs()
    start = 0.0
    for m in messages:
        text = visible_text(m)
        tokens = count_message(m)
        b.texts.append((start, tokens, text))
        start += tokens
    b.total_tokens = int(start)
    task_msg = -1
    for i, m in enumerate(messages):
        text = b.texts[i][2]
        p = _parse(text)
        if p.task_id and b.task_id is None:
            b.task_id, task_msg = p.task_id, i
        if p.step:
            b.step, b.step_pos = p.step, b.position(i, p.step_offset)
            block = text[p.step_offset:]
            b.step_line = block.split("\n", 1)[0]
            first = p.step_offset + len(b.step_line) + 1
            end = text.find("\n", first)
            b.instructions = (i, first, end if end >= 0 else len(text))
            touched = _TOUCHES_RE.search(block)
            b.touches = tuple(x.strip() for x in touched.group("paths").split(",")) if touched else ()
        words = said.words(m.content, ((c.name, c.args) for c in m.tool_calls))
        summary = SUMMARY_MARK in m.content
        for off, sentence in _said(words):
            at = off if off < len(m.content) else max(text.find(sentence), 0)
            b.said.append(Said(sentence, said.normal(sentence), b.position(i, at), said.marked(sentence),
                               m.role, i == task_msg, summary))
        for off, sid, title in p.plan:
            b.facts.append(Seen(f"step:{sid}", title, b.position(i, off), i == task_msg))
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
                    FileSeen(committed, render.content_sha(content), content, b.position(i, 0)))
            verb = _RESULT_RE.match(m.content)
            if verb and verb.group("verb") == "deleted":
                b.deleted[verb.group("path")] = b.position(i, 0)
    # Just seen: the results of the model's own last calls, and the last `recent_tokens`.
    trailing = len(messages)
    while trailing > 0 and messages[trailing - 1].role == "tool":
        trailing -= 1
    b.fresh_from = b.texts[trailing][0] if trailing < len(messages) else float(b.total_tokens)
    return b


def _committed_path(call: CallSeen | None) -> str | None:
    """The path of a `git show HEAD:<path>` call."""
    if call is None or call.name != "git" or call.args.get("subcommand") != "show":
        return None
    args = call.args.get("args") or []
    return args[0][5:] if len(args) == 1 and isinstance(args[0], str) and args[0].startswith("HEAD:") else None


def result_error(r: ResultSeen) -> bool:
    return r.text.lstrip().startswith("ERROR")
