"""The simulated summariser: what survives a compaction.

Asked to compact, the sim writes a summary that re-renders the facts it keeps with the same
markers the harness uses, so the next turn perceives them like any other text. Each fact is
kept with a per-kind probability: the plan's shape and prominently stated (task-level)
invariants survive well, an invariant stated in passing mid-transcript often does not, and
file contents never do (a summary that holds whole files is not a summary). This is the
failure the seed article describes: the summary kept "extract auth, several steps done" and
dropped the sentence about the variadic parameter.

Draws are keyed by (seed, fact id, number of passed checks visible): the same fact in the
same trial stage has the same luck whatever the strategy, and a later compaction (more
steps passed) draws afresh.
"""

from __future__ import annotations

from bench.sim.params import SimParams
from bench.sim.perception import Beliefs, CheckSeen, Seen
from bench.sim.recall import draw

HEADER = "SUMMARY OF EARLIER WORK (older messages were compacted into this summary)"
_FAILURE_LINES = 15  # of the newest failure's output, the part an engineer would quote


def _check_line(c: CheckSeen) -> str:
    if c.passed:
        return f"[check:{c.step} passed]"
    return f"[check:{c.step} failed" + (f" exit={c.code}]" if c.code is not None else "]")


def summarise(b: Beliefs, p: SimParams, seed: int, task_facts: tuple[tuple[str, str], ...] = ()) -> str:
    passed = sum(1 for c in b.checks if c.passed)

    def keep(fact_id: str, prob: float) -> bool:
        return draw(seed, fact_id, passed, "retain") < prob

    first: dict[str, Seen] = {}
    prominent: set[str] = set()
    for seen in b.facts:
        first.setdefault(seen.key, seen)
        if seen.in_task:
            prominent.add(seen.key)
    invariants = [f"[inv:{s.key[4:]}] {s.text}" for k, s in first.items() if k.startswith("inv:")
                  and keep(k, p.retain_task_invariant if k in prominent else p.retain_invariant)]
    plan = [f"[step:{s.key[5:]}] {s.text}" for k, s in first.items()
            if k.startswith("step:") and keep(k, p.retain_plan)]
    facts = [text for fid, text in task_facts
             if any(text in t for _, _, t in b.texts) and keep(f"fact:{fid}", p.retain_fact)]

    # Progress: each step's newest verdict; the current step's failures stay with its header.
    newest: dict[str, CheckSeen] = {}
    for c in b.checks:
        newest[c.step] = c
    progress = [_check_line(c) for s, c in newest.items() if s != b.step and keep(f"check:{s}", p.retain_check)]
    # Failures of the current step set its attempt count, so all of them are candidates.
    current_failures = [c for c in b.checks if c.step == b.step and not c.passed]
    done_now = b.step in newest and newest[b.step].passed

    parts = [HEADER]
    if b.task_id:
        parts.append(f"[task:{b.task_id}] (task id)")
    if invariants:
        parts += ["INVARIANTS", *invariants]
    if plan:
        parts += ["PLAN", *plan]
    if facts:
        parts += ["NOTES", *facts]
    if progress:
        parts += ["PROGRESS", *progress]
    if b.step:
        parts.append(b.step_line or f"CURRENT STEP [step:{b.step}]")
        kept = [c for i, c in enumerate(current_failures) if keep(f"check:{b.step}:{i}", p.retain_check)]
        if done_now:  # a passed step needs no failure history, and it must stay the newest verdict
            parts.append(_check_line(newest[b.step]))
        elif kept:
            parts.append("LAST FAILURE:")
            parts += [_check_line(c) for c in kept]
            parts += kept[-1].output.splitlines()[:_FAILURE_LINES]
    return "\n".join(parts)
