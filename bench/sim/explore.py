"""Looking before acting: the tool calls a careful engineer makes to reach durable facts.

Every fact a strategy's context can show -- the history and its messages, what changed since
the last look, the current content of a file -- is reachable through the published tools
(`git` status/log, `read_file`), so every strategy can reach the same facts; whether the model
actually looks is a behaviour with a rate, one parameter each (bench/sim/params.py):

  p_look_history        at a step's first turn: `git status --short` and
                        `git log --stat -n history_depth` (commit messages, who, which files)
  p_check_changes       at a step's first turn, when an earlier `git log` in view showed a HEAD:
                        `git log --stat <that HEAD>..HEAD` (what changed since it last looked)
  p_reread_before_edit  before the first edit batch of an attempt: re-read each file to edit
                        whose newest copy in view predates this step

What the outputs hold is read like any other text (perception): a commit message with a keep
cue is a constraint statement; `git log` output is a drift cue naming the files it lists, so
copies of those files held from before are re-read (action `_needed_reads`). Draws are keyed
by (seed, step, attempt, content: the step's header, the file's hash): common random numbers,
like every other draw, and never shared by two tasks that happen to have the same seed.
`model.mechanisms.exploration=false` sets all three rates to 0.
"""

from __future__ import annotations

import re
from typing import Any

from bench.sim.params import SimParams
from bench.sim.perception import Beliefs, CallSeen
from bench.sim.recall import draw
from tasks.spec import StepPlan

# The first commit line of a `git log` output is the HEAD it was run at.
_COMMIT_RE = re.compile(r"^commit ([0-9a-f]{7,40})\b", re.M)
Call = tuple[str, dict[str, Any]]


def _git_log_calls(b: Beliefs) -> list[CallSeen]:
    return [c for c in b.calls if c.name == "git" and c.args.get("subcommand") == "log"]


def last_head_seen(b: Beliefs) -> str | None:
    """The HEAD the newest `git log` in view was run at (its first commit line), if any."""
    logs = {c.id for c in _git_log_calls(b)}
    for r in reversed(b.results):
        if r.call_id in logs:
            m = _COMMIT_RE.search(r.text)
            if m:
                return m.group(1)
    return None


def orient(b: Beliefs, p: SimParams, seed: int, sid: str) -> tuple[Call, ...]:
    """The look at history and status a step's first turn may start with (none if it says no)."""
    calls: list[Call] = []
    seen = last_head_seen(b)
    step = f"explore:{b.step_line}"  # by content: two tasks on one seed do not share the draw
    if seen and draw(seed, sid, 0, step, "changes") < p.p_check_changes:
        calls.append(("git", {"subcommand": "log", "args": ["--stat", f"{seen}..HEAD"]}))
    if draw(seed, sid, 0, step, "history") < p.p_look_history:
        calls = [
            ("git", {"subcommand": "status", "args": ["--short"]}),
            ("git", {"subcommand": "log", "args": ["--stat", "-n", str(int(p.history_depth))]}),
        ]
    return tuple(calls)


def first_turn_of_step(b: Beliefs, attempt: int) -> bool:
    """Nothing done yet in this step: no call after its notice, no failed check."""
    return attempt == 0 and not any(b.step_pos < c.pos for c in b.calls)


def rereads(
    b: Beliefs, plan: StepPlan, p: SimParams, seed: int, sid: str, attempt: int, after: list[CallSeen]
) -> list[str]:
    """Files about to be edited whose newest copy in view is from before this step began,
    each re-read with `p_reread_before_edit` (once per attempt)."""
    out: list[str] = []
    for e in plan.edits:
        if e.kind == "delete" or e.path in out:
            continue
        newest = b.newest(e.path)
        if newest is None or b.step_pos < newest.pos:
            continue
        if any(c.name == "read_file" and c.args.get("path") == e.path for c in after):
            continue
        if draw(seed, sid, attempt, f"reread:{e.path}@{newest.sha}", "look") < p.p_reread_before_edit:
            out.append(e.path)
    return out
