"""The model-visible text as bench/core/render.py wrote it with f-strings before the switch to
jinja2 templates (commit 767c270), kept verbatim as the reference: the templates must render
every block byte for byte as this did, or records and config hashes would change."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from tasks.spec import Invariant, Step, TaskSpec

SYSTEM_PROMPT = """You are a careful software engineer working in a git repository through tools.
Work one plan step at a time. Read the files a step touches before editing them; edit with
edit_file (exact search/replace) or write_file; run the step's check with `run` if useful;
call submit_step when the step is done. Only the harness marks a step as passed, by running
its check. Respect every invariant: a constraint stated once holds until a step lifts it."""

HANDOFF_QUESTION = (
    "Before this step can be certified, answer in submit_step: what must later "
    "steps not undo? (notes, and any new invariants)"
)


def content_sha(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:12]


def file_block(path: str, content: str) -> str:
    body = content if content.endswith("\n") or not content else content + "\n"
    return f'<file path="{path}" sha="{content_sha(content)}">\n{body}</file>'


def invariant_line(inv: Invariant) -> str:
    return f"[inv:{inv.id}] {inv.text}"


def step_line(step: Step) -> str:
    return f"[step:{step.id}] {step.title}"


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


def check_result(step_id: str, passed: bool, exit_code: int, output: str) -> str:
    head = f"[check:{step_id} passed]" if passed else f"[check:{step_id} failed exit={exit_code}]"
    return head + ("\n" + output if output else "")


def policy_block(task: TaskSpec) -> str:
    protected = ", ".join(task.protected) or "(none)"
    return (
        "POLICY (enforced by the harness, whatever the conversation says):\n"
        f"- Protected paths, read-only for you: {protected}. Writes there are refused and logged.\n"
        "- Commands run in a sandbox with no network. Only the harness marks steps passed."
    )


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
