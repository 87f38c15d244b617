"""Sections of the step brief that `ledger` and `subagent` rebuild from durable state.

Each function returns one section's text; markers come from `bench.core.render` only
(`[inv:ID]`, `[step:ID]`, `[check:ID passed]`, `CURRENT STEP [step:ID]`, file blocks).
"""

from __future__ import annotations

from dataclasses import replace

from bench.core import render
from bench.core.tokens import count_text
from strategies._common import one_line
from strategies.base import Certified, State

CONSISTENCY_ADVICE = (
    "Files you remember from earlier steps may be stale: re-read a file before editing it, and "
    "check that the certified steps and the invariants still hold on the current tree."
)


def learned_invariants(state: State, cap: int) -> str:
    lines = [render.invariant_line(replace(i, text=one_line(i.text, cap))) for i in state.learned]
    return (
        "INVARIANTS ESTABLISHED BY COMPLETED STEPS (they hold like the task's; "
        "plan-time invariants are in the task above)\n" + ("\n".join(lines) or "(none yet)")
    )


def remaining_plan(state: State) -> str:
    rest = state.task.steps[state.step_index + 1 :]
    lines = [render.step_line(s) for s in (state.step, *rest)]
    return "REMAINING PLAN (the current step first)\n" + "\n".join(lines)


def _check_line(c: Certified) -> str:
    return f"{render.check_result(c.step_id, True, 0, '')} `{c.check}` on tree {c.tree_sha[:12]}"


def certified(state: State, cap: int) -> str:
    """Ledger form: one line per passed step, naming its check and the tree it passed on."""
    lines = []
    for c in state.certified:
        line = _check_line(c)
        if c.notes.strip():
            line += " | must not undo: " + one_line(c.notes, cap)
        lines.append(line)
    return "CERTIFIED (passed steps; the harness ran each check)\n" + ("\n".join(lines) or "(none yet)")


def ledger_entries(state: State, cap: int) -> str:
    """Subagent form: one entry per passed step, as earlier subagents returned them."""
    entries = []
    for c in state.certified:
        entry = [_check_line(c), "  notes: " + (one_line(c.notes, cap) or "(none)")]
        stat = [ln.rstrip() for ln in c.diffstat.splitlines() if ln.strip()]
        entry += (
            ["  diffstat:"] + ["    " + ln.strip() for ln in stat] if stat else ["  diffstat: (no changes)"]
        )
        entries.append("\n".join(entry))
    return "COMPLETED STEPS (ledger entries returned by the earlier steps' conversations)\n" + (
        "\n".join(entries) or "(none yet)"
    )


def tree(state: State) -> str:
    return f"TREE (read fresh at the head of this step; HEAD {state.head.repo_commit})\n" + (
        state.head.tree.rstrip() or "(clean)"
    )


def current_step(state: State) -> str:
    return render.current_step_block(state.step, state.last_failure)


def files(state: State, budget_tokens: int) -> str:
    """Current contents of the step's touches, in order, as file blocks, while they fit."""
    blocks, omitted, used = [], [], 0
    for path, content in state.head.files:
        block = render.file_block(path, content)
        n = count_text(block)
        if used + n <= budget_tokens:
            blocks.append(block)
            used += n
        else:
            omitted.append(path)
    out = ["FILES (current contents of this step's touches, read at the head of the step)"]
    out += blocks or ["(none)"]
    if omitted:
        out.append("Not shown (over the files budget; read them if you need them): " + ", ".join(omitted))
    return "\n".join(out)


def drift(state: State) -> str | None:
    """The harness's drift note (under a CONSISTENCY NOTE header unless it has one), then what to do."""
    note = (state.head.drift_note or "").strip()
    if not note:
        return None
    if not note.startswith("CONSISTENCY NOTE"):
        note = "CONSISTENCY NOTE: the repository moved since the last step (an outside commit).\n" + note
    return note + "\n" + CONSISTENCY_ADVICE


def join(title: str, sections: list[str | None]) -> str:
    return "\n\n".join([title] + [s for s in sections if s])
