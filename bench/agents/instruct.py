"""What an external agent is told at each instruction: the task first; after a certified step, its
verdict as ctxbench's own loop reads it (the driver certifies after the turn and hands over only
the next step); a retry or the same step again, the instruction alone."""

from __future__ import annotations

from bench.core.render import policy_block, step_passed, task_block
from bench.trial.player import Instruction
from tasks.spec import TaskSpec


def instruction_text(
    task: TaskSpec, instruction: Instruction, started: bool, last_index: int, opening: str = ""
) -> str:
    """`opening` goes before the first message (mini puts the task after its own prompt's words)."""
    if not started:
        return f"{opening}{task_block(task)}\n\n{policy_block(task)}\n\n{instruction.text}"
    if instruction.retry or instruction.index == last_index:
        return instruction.text
    return f"{step_passed(task.steps[last_index])}\n\n{instruction.text}"
