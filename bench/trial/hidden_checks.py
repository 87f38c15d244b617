"""The final acceptance's hidden checks (tasks/common/hidden.py; issue 42, item 3): how
certify.py runs them and records their verdict apart from the visible one.

The task's hidden test file (`TaskSpec.hidden`, held by `HarnessCopy`) is written into the
judge's copy of the final acceptance only, under the protected `tools/` (the working copy's
version of that path is never read: judge.tree_entries), is trusted by the launcher like every
protected file (the comparer runs it; the code under test answers it through its proxies), and
runs as one more group of the same exec, judged like the others. The copy is written again
without it right after the exec, before anything of the agent's could run. The `check` event
keeps `passed` for the visible parts and `hidden` = {"passed", "parts"} for these; the trial's
verdict needs both, and `success_visible` (bench/eventlog/measures.py) is the verdict without them.

Limits: the certified tree sha excludes the file (it is not the agent's). During the final check
the code under test runs as the agent's uid and could read the file from the judge's copy
(world-readable, as the whole copy is); closing that needs the file readable by the comparer's
uid only, a change to the judge's copy (judge.py) left to its owner.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

GROUP = "hidden"


def files(copy: Any, step_id: str) -> dict[str, str]:
    """The hidden files to write for this check: the task's, for the final acceptance only."""
    return dict(copy.hidden) if step_id == "final" and copy.hidden_check else {}


def key(copy: Any) -> str:
    """What of the hidden checks decides a verdict, for the check cache's key."""
    return copy.hidden_check + " " + hashlib.sha256(json.dumps(sorted(copy.hidden.items())).encode()).hexdigest()


def with_files(entries: Mapping[str, tuple[str, bytes]], hidden: Mapping[str, str]) -> dict[str, tuple[str, bytes]]:
    return {**entries, **{p: ("file", c.encode()) for p, c in hidden.items()}}


def verdict(parts: tuple, judged: list[tuple[bool, str, bool]], timed_out: bool) -> dict[str, Any]:
    """The hidden group's record: {"passed", "parts": [{"part", "ok", "why"}]}."""
    rows = [{"part": p.text, "ok": ok, "why": why} for p, (ok, why, _) in zip(parts, judged, strict=True)]
    return {"passed": all(r["ok"] for r in rows) and not timed_out, "parts": rows}
