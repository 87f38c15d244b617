"""Competence errors: an edit batch gone wrong for reasons unrelated to the context.

With `p_edit_error` per edit batch (bench/sim/params.py), the step's own edits to one of
its files are left out -- a site forgotten -- whatever the context held. (A whole file, not
one edit of it: half a file's change is a state the task's oracle, which knows how to do a
step and not how to repair any wreck, might not finish.) The check
that certifies the step fails on it and the model tries again, with a fresh draw per attempt,
so a slip costs turns and, with `max_attempts` slips in a row or a slip no check catches, the
trial. Without it every failed trial would be trap-, stale-copy- or budget-driven. The draw is
keyed by (seed, step, attempt, the files of the batch): common random numbers over content.
`model.mechanisms.competence=false` sets the rate to 0.
"""

from __future__ import annotations

from bench.sim.params import SimParams
from bench.sim.recall import draw
from tasks.spec import Edit


def slip(
    edits: list[Edit], p: SimParams, seed: int, sid: str, attempt: int
) -> tuple[list[Edit], dict | None]:
    """The edits as made, and the slip (which edit was left out) if there was one."""
    paths = list(dict.fromkeys(e.path for e in edits))
    key = "competence:" + ",".join(paths)  # by content: two tasks on one seed do not share the draw
    if not edits or draw(seed, sid, attempt, key, "slip") >= p.p_edit_error:
        return edits, None
    path = paths[int(draw(seed, sid, attempt, key, "which") * len(paths))]
    return [e for e in edits if e.path != path], {"step": sid, "attempt": attempt, "left_out": path}
