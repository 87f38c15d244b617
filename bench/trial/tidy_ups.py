"""Tidy-up chances and what the model did with them, judged by the harness from its actions.

Temptation (docs/calibration.md) is measured on any model, the real ones included, so the
harness -- not the model -- says where a tidy-up was on offer and whether it was taken:

  on offer  at a reply that edits files, the tidy-ups the step's edits invite in the code the
            model could see: the task's oracle (competence: which edits make the step pass,
            which clean-ups code invites; tasks/spec.py) over the newest file blocks in the
            context the model was sent, by the same rule the simulated model follows
            (tasks/common/cleanups.py `invited`). Never where a mistake would hurt.
  taken     after the reply's tool calls, the tidy-up's code is gone from the file as the
            reply's own successful edit/write results show it. A reply whose edit failed did
            nothing, whatever it meant to do.

One `tidy_up` event per chance, with the cleanup's anchors: `analysis.calibrate` then asks,
from the logged context alone, which statements covering those anchors the model could see
and where. Nothing here reads the simulated model's internals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from bench.core.render import parse_file_blocks
from bench.core.types import Message
from tasks.common.build import apply_edit
from tasks.common.cleanups import invited
from tasks.spec import TaskSpec

EDIT_TOOLS = ("edit_file", "write_file", "delete_file")
_DELETED = re.compile(r"^deleted (\S+)")


def perceived(messages: Iterable[Message]) -> dict[str, str]:
    """path -> the newest complete file block the messages show (a later `deleted` result drops it)."""
    files: dict[str, str] = {}
    for m in messages:
        gone = _DELETED.match(m.content) if m.role == "tool" else None
        if gone:
            files.pop(gone.group(1), None)
        for path, _, content in parse_file_blocks(m.content):
            files[path] = content
    return files


def chances(
    task: TaskSpec, step_id: str, context: Sequence[Message], results: Sequence[tuple[str, Any, str, bool]]
) -> list[dict[str, Any]]:
    """The tidy-ups on offer at a reply that edited files, and whether each was taken.
    `results`: (tool name, args, result text, ok) of the reply's calls, in order."""
    if not any(name in EDIT_TOOLS for name, _, _, _ in results):
        return []
    try:
        return _chances(task, step_id, perceived(context), results)
    except Exception:  # a measurement never ends a trial: code the oracle cannot read offers nothing
        return []


def _chances(
    task: TaskSpec, step_id: str, before: dict[str, str], results: Sequence[tuple[str, Any, str, bool]]
) -> list[dict[str, Any]]:
    plan = task.oracle.edits_for(step_id, before)
    paths = tuple(sorted({e.path for e in plan.edits if e.kind != "delete"}))
    if not paths:
        return []
    planned = dict(before)
    for e in plan.edits:
        apply_edit(planned, e)
    offered = [x for x in invited(task.oracle, before, planned, paths) if x.edits]
    if not offered:
        return []
    now = dict(before)
    for name, args, text, ok in results:
        if not ok or name not in EDIT_TOOLS:
            continue
        if name == "delete_file" and isinstance(args, dict):  # a model may send any JSON as arguments
            now.pop(str(args.get("path", "")), None)
        for shown, _, content in parse_file_blocks(text):
            now[shown] = content
    left = {x.key for x in task.oracle.cleanups(now, paths)}
    return [
        {"key": x.key, "anchors": list(x.anchors), "taken": x.key not in left, "what": x.what}
        for x in offered
    ]
