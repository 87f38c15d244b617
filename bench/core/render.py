"""How the harness renders state into model-visible text, and how that text is read back.

The markers are plain and human-readable (a real model reads them as easily as the
simulated one): `[task:ID]`, `[inv:ID] text`, `[step:ID] title`, file blocks with path
and content hash, `[check:ID passed|failed exit=N]`. The simulated model perceives a
context only through the parse functions below, so it never sees harness state that is
not in the messages.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from tasks.spec import Invariant, Step, TaskSpec

SYSTEM_PROMPT = """You are a careful software engineer working in a git repository through tools.
Work one plan step at a time. Read the files a step touches before editing them; edit with
edit_file (exact search/replace) or write_file; run the step's check with `run` if useful;
call submit_step when the step is done. Only the harness marks a step as passed, by running
its check. Respect every invariant: a constraint stated once holds until a step lifts it."""

HANDOFF_QUESTION = ("Before this step can be certified, answer in submit_step: what must later "
                    "steps not undo? (notes, and any new invariants)")

_FILE_RE = re.compile(r'<file path="(?P<path>[^"]+)" sha="(?P<sha>[0-9a-f]+)">\n(?P<body>.*?)</file>', re.S)
_INV_RE = re.compile(r"^\[inv:(?P<id>[A-Za-z0-9_.-]+)\] (?P<text>.+)$", re.M)
_TASK_RE = re.compile(r"^\[task:(?P<id>[^\]]+)\]", re.M)
_CURRENT_RE = re.compile(r"^CURRENT STEP \[step:(?P<id>[A-Za-z0-9_.-]+)\]", re.M)
_CHECK_RE = re.compile(r"^\[check:(?P<id>[A-Za-z0-9_.-]+) (?P<verdict>passed|failed)(?: exit=(?P<code>-?\d+))?\]", re.M)


def content_sha(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:12]


def file_block(path: str, content: str) -> str:
    body = content if content.endswith("\n") or not content else content + "\n"
    return f'<file path="{path}" sha="{content_sha(content)}">\n{body}</file>'


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
    return f"[inv:{inv.id}] {inv.text}"


def parse_invariants(text: str) -> list[tuple[str, str]]:
    return [(m.group("id"), m.group("text")) for m in _INV_RE.finditer(text)]


def step_line(step: Step) -> str:
    return f"[step:{step.id}] {step.title}"


def parse_task_id(text: str) -> str | None:
    m = _TASK_RE.search(text)
    return m.group("id") if m else None


def current_step_block(step: Step, last_failure: str | None = None) -> str:
    lines = [
        f"CURRENT STEP [step:{step.id}] {step.title}",
        step.instructions,
        "Touches: " + ", ".join(step.touches),
        f"Check: `{step.check}`",
    ]
    if last_failure:
        lines += ["LAST FAILURE:", last_failure]
    return "\n".join(lines)


def parse_current_step(text: str) -> str | None:
    """The step id of the LAST `CURRENT STEP` header in the text."""
    ids = [m.group("id") for m in _CURRENT_RE.finditer(text)]
    return ids[-1] if ids else None


def check_result(step_id: str, passed: bool, exit_code: int, output: str) -> str:
    head = f"[check:{step_id} passed]" if passed else f"[check:{step_id} failed exit={exit_code}]"
    return head + ("\n" + output if output else "")


def parse_check_results(text: str) -> list[tuple[str, bool, int | None]]:
    return [(m.group("id"), m.group("verdict") == "passed", int(m.group("code")) if m.group("code") else None)
            for m in _CHECK_RE.finditer(text)]


def policy_block(task: TaskSpec) -> str:
    protected = ", ".join(task.protected) or "(none)"
    return ("POLICY (enforced by the harness, whatever the conversation says):\n"
            f"- Protected paths, read-only for you: {protected}. Writes there are refused and logged.\n"
            "- Commands run in a sandbox with no network. Only the harness marks steps passed.")


def plan_lines(steps: Iterable[Step]) -> str:
    return "\n".join(step_line(s) for s in steps)


def task_block(task: TaskSpec) -> str:
    """The task message: identity, statement, plan-time invariants, the whole plan."""
    parts = [
        f"[task:{task.task_id}] {task.title}",
        task.text,
        f"Test command: `{task.test_command}`",
        "INVARIANTS",
        "\n".join(invariant_line(i) for i in task.invariants) or "(none)",
        "PLAN",
        plan_lines(task.steps),
    ]
    return "\n\n".join(parts)
