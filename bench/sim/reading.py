"""Reading one message's text as the simulated model does: its file blocks, check results,
current step, plan lines and signs that the repository moved, through `bench.core.render`'s
parse functions and plain string reading (bench/sim/perception.py puts them in context order).

A text's reading is kept (`parse` is cached per text): a trial resends the same messages every
turn, so only the newest ones cost anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from bench.core import render
from bench.core.types import Message

# A step line of a plan, as render.step_line writes it (render has no parse function for it).
PLAN_RE = re.compile(r"^\[step:(?P<id>[A-Za-z0-9_.-]+)\] (?P<title>.+)$", re.M)
# Repo-relative paths named in failure or git output. An extension list keeps `os.path` or
# `e.g.` from being taken for files; the look-behind skips absolute paths (site-packages).
PATH_RE = re.compile(
    r"(?<![\w/.-])((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-][A-Za-z0-9_.-]*"
    r"\.(?:py|pyi|cfg|toml|ini|txt|json|ya?ml|md|rst|js|ts|go|rs|c|h|sh))(?![\w/])"
)
# What a moved repository looks like in text: a harness consistency/drift note ("the repository
# changed ... by commits not yours"), git log/show output of someone else's commit.
DRIFT_RE = re.compile(
    r"(?im)\bdrift\b|CONSISTENCY NOTE|commits? not yours|outside commit|HEAD moved"
    r"|^commit [0-9a-f]{7,40}\b|^Author: "
)


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
def parse(text: str) -> _Parsed:
    files, off = [], 0
    for path, sha, content in render.parse_file_blocks(text):
        off = _locate(text, f'<file path="{path}" sha="{sha}">', off)
        files.append((off, path, sha, content))
    checks, off = [], 0
    found = render.parse_check_results(text)
    for i, (sid, passed, code) in enumerate(found):
        head = (
            f"[check:{sid} passed]"
            if passed
            else f"[check:{sid} failed" + (f" exit={code}]" if code is not None else "]")
        )
        off = _locate(text, head, off)
        end = text.find("[check:", off + len(head)) if i + 1 < len(found) else -1
        checks.append((off, sid, passed, code, text[off + len(head) : end if end >= 0 else None].strip()))
    step = render.parse_current_step(text)
    step_off = text.rfind(f"CURRENT STEP [step:{step}]") if step else -1
    plan = tuple((m.start(), m.group("id"), m.group("title")) for m in PLAN_RE.finditer(text))
    drift = None
    bare = re.sub(r"<file path=.*?</file>", "", text, flags=re.S)  # drift is read outside file bodies
    cue = DRIFT_RE.search(bare)
    if cue:
        paths = tuple(dict.fromkeys(PATH_RE.findall(bare)))
        drift = (_locate(text, cue.group(0), 0), paths)
    return _Parsed(render.parse_task_id(text), step, step_off, plan, tuple(files), tuple(checks), drift)


def named_paths(text: str, limit: int) -> list[str]:
    """Repo-relative file paths named in a piece of output, first mention first."""
    return list(dict.fromkeys(PATH_RE.findall(text)))[:limit]
