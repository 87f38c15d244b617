"""How the harness renders state into model-visible text, and how that text is read back.

The markers are plain and human-readable (a real model reads them as easily as the
simulated one): `[task:ID]`, `[inv:ID] text`, `[step:ID] title`, file blocks with path
and content hash, `[check:ID passed|failed exit=N]`, written by the jinja2 templates in
bench/core/templates/. The simulated model perceives a context only through the parse
functions below, so it never sees harness state that is not in the messages.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

import jinja2

from tasks.spec import Invariant, Step, TaskSpec

# The text lives in bench/core/templates/ (jinja2, StrictUndefined: a missing field is an error,
# never an empty string in a model's context). tests/bench/core/test_render.py compares the output
# to the f-strings these templates replaced, byte for byte: records and config hashes hang on it.
_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("bench.core", "templates"),
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=False,
)
_LINES: Any = _TEMPLATES.get_template("lines.txt.j2").module  # its macros, one a marker


def _render(name: str, **fields: object) -> str:
    return _TEMPLATES.get_template(name).render(**fields)


SYSTEM_PROMPT = _render("system_prompt.txt.j2")
HANDOFF_QUESTION = _render("handoff_question.txt.j2")

_FILE_RE = re.compile(r'<file path="(?P<path>[^"]+)" sha="(?P<sha>[0-9a-f]+)">\n(?P<body>.*?)</file>', re.S)
_INV_RE = re.compile(r"^\[inv:(?P<id>[A-Za-z0-9_.-]+)\] (?P<text>.+)$", re.M)
_TASK_RE = re.compile(r"^\[task:(?P<id>[^\]]+)\]", re.M)
_CURRENT_RE = re.compile(r"^CURRENT STEP \[step:(?P<id>[A-Za-z0-9_.-]+)\]", re.M)
_CHECK_RE = re.compile(
    r"^\[check:(?P<id>[A-Za-z0-9_.-]+) (?P<verdict>passed|failed)(?: exit=(?P<code>-?\d+))?\]", re.M
)


def content_sha(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:12]


def file_block(path: str, content: str) -> str:
    return _render("file.txt.j2", path=path, sha=content_sha(content), content=content)


def parse_file_blocks(text: str) -> list[tuple[str, str, str]]:
    """(path, sha, content) for every complete file block, in order of appearance.

    A block whose body no longer matches its sha (e.g. cut by a summariser) is skipped:
    a partial file is not a file the reader can edit against.
    """
    out = []
    for m in _FILE_RE.finditer(text):
        body = m.group("body")
        for candidate in (body, body[:-1] if body.endswith("\n") else body):
            if content_sha(candidate) == m.group("sha"):
                out.append((m.group("path"), m.group("sha"), candidate))
                break
    return out


def invariant_line(inv: Invariant) -> str:
    return str(_LINES.invariant_line(inv))


def parse_invariants(text: str) -> list[tuple[str, str]]:
    return [(m.group("id"), m.group("text")) for m in _INV_RE.finditer(text)]


def step_line(step: Step) -> str:
    return str(_LINES.step_line(step))


def parse_task_id(text: str) -> str | None:
    m = _TASK_RE.search(text)
    return m.group("id") if m else None


def current_step_block(step: Step, last_failure: str | None = None) -> str:
    return _render("current_step.txt.j2", step=step, last_failure=last_failure)


def parse_current_step(text: str) -> str | None:
    """The step id of the LAST `CURRENT STEP` header in the text."""
    ids = [m.group("id") for m in _CURRENT_RE.finditer(text)]
    return ids[-1] if ids else None


def check_result(step_id: str, passed: bool, exit_code: int, output: str) -> str:
    return _render("check.txt.j2", step_id=step_id, passed=passed, exit_code=exit_code, output=output)


def step_passed(step: Step) -> str:
    """The verdict a certified step's player reads: its check passed, and the invariants it
    established (the harness's certification, bench/trial/driver.py, whoever plays)."""
    text = check_result(step.id, True, 0, "")
    if step.establishes:
        text += "\nEstablished by this step:\n" + "\n".join(invariant_line(i) for i in step.establishes)
    return text


def parse_check_results(text: str) -> list[tuple[str, bool, int | None]]:
    return [
        (m.group("id"), m.group("verdict") == "passed", int(m.group("code")) if m.group("code") else None)
        for m in _CHECK_RE.finditer(text)
    ]


def policy_block(task: TaskSpec) -> str:
    return _render("policy.txt.j2", task=task)


def plan_lines(steps: Iterable[Step]) -> str:
    return str(_LINES.plan_lines(list(steps)))


def task_block(task: TaskSpec) -> str:
    """The task message: identity, statement, plan-time invariants, the whole plan."""
    return _render("task.txt.j2", task=task)
