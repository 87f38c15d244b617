"""The simulated summariser: what survives a compaction.

Asked to compact, the sim writes a summary that re-renders what it keeps with the same
markers the harness uses, so the next turn perceives it like any other text. Each piece is
kept with a per-kind probability: plan lines and constraints the task states survive well, a
constraint stated in passing mid-transcript (an invariant line a step established, a hand-off
note, an instruction) often does not, and file contents never do (a summary that holds whole
files is not a summary). This is the failure the seed article describes: the summary kept
"extract auth, several steps done" and dropped the sentence about the variadic parameter.

A kept invariant line is copied verbatim (`[inv:ID] text`) with `p_verbatim`, else restated in
the summary's own words: unmarked, so it binds only with `p_paraphrase` (bench/sim/recall.py).
A kept unmarked sentence (a note, an instruction) is such a paraphrase from the start.

Draws are keyed by (seed, content, number of passed checks visible): the same statement in
the same trial stage has the same luck whatever the strategy, and a later compaction (more
steps passed) draws afresh.
"""

from __future__ import annotations

import re

from bench.sim.params import SimParams
from bench.sim.perception import Beliefs, CheckSeen, Said, Seen
from bench.sim.recall import draw
from ctxlog import statements

HEADER = "SUMMARY OF EARLIER WORK (older messages were compacted into this summary)"
_FAILURE_LINES = 15  # of the newest failure's output, the part an engineer would quote


def _check_line(c: CheckSeen) -> str:
    if c.passed:
        return f"[check:{c.step} passed]"
    return f"[check:{c.step} failed" + (f" exit={c.code}]" if c.code is not None else "]")


def _retention(p: SimParams, st: Said, marked: bool) -> float:
    if st.in_task:
        return p.retain_task_invariant
    return p.retain_invariant if marked else p.retain_fact


# A transcript rendered for the summariser shows tool calls as JSON (strategies/_common.py
# `render_transcript`): a summariser reads the strings in it, not the quotes and brackets, so
# `submit_step {"invariants":["X stays."],"notes":"..."}` states `X stays.` -- else the JSON
# residue made each compaction copy the statement once more, escaped one level deeper, until
# the summary outgrew the reply (oracle, strategy=compaction, arm=compaction).
_JSON = re.compile(r'\\*"\s*[\[\]{}:,]*\s*\\*"|\\*"\s*[\[\]{}:,]+|[\[\]{}:,]+\s*\\*"')


def _pieces(text: str) -> list[str]:
    if '"' not in text:
        return [text]
    parts = (x.replace("\\n", " ").lstrip(' \\"{,').rstrip(' \\"{}[],') for x in _JSON.split(text))
    return [x for x in parts if x and statements.KEEP_CUE.search(x)]


def _bare(norm: str) -> str:
    return norm.strip(" \"'}]{[,\\").rstrip(".")


def summarise(b: Beliefs, p: SimParams, seed: int) -> str:
    passed = sum(1 for c in b.checks if c.passed)

    def keep(key: str, prob: float) -> bool:
        return draw(seed, key, passed, "retain") < prob

    first: dict[str, Seen] = {}
    for seen in b.facts:
        first.setdefault(seen.key, seen)
    said: dict[str, tuple[Said, str]] = {}
    request = len(b.texts) - 1  # the compaction prompt: its own instructions are not facts of the task
    for st in b.said:
        if st.role != "system" and st.pos.msg != request:
            for text in _pieces(st.text):
                said.setdefault(_bare(statements.normal(text)), (st, text))
    verbatim, own_words = [], []
    for st, text in said.values():
        norm, marked = statements.normal(text), statements.marked(text)  # the draws' key: the words
        if not keep(f"said:{norm}", _retention(p, st, marked)):
            continue
        if marked and draw(seed, f"said:{norm}", passed, "verbatim") < p.p_verbatim:
            verbatim.append(text)
        else:
            own_words.append("- " + text.split("] ", 1)[1] if marked else "- " + text)
    plan = [
        f"[step:{s.key[5:]}] {s.text}"
        for k, s in first.items()
        if k.startswith("step:") and keep(k, p.retain_plan)
    ]

    # Progress: each step's newest verdict; the current step's failures stay with its header.
    newest: dict[str, CheckSeen] = {}
    for c in b.checks:
        newest[c.step] = c
    progress = [
        _check_line(c) for s, c in newest.items() if s != b.step and keep(f"check:{s}", p.retain_check)
    ]
    # Failures of the current step set its attempt count, so all of them are candidates.
    current_failures = [c for c in b.checks if c.step == b.step and not c.passed]
    done_now = b.step in newest and newest[b.step].passed

    parts = [HEADER]
    if b.task_id:
        parts.append(f"[task:{b.task_id}] (task id)")
    if verbatim:
        parts += ["INVARIANTS", *verbatim]
    if own_words:
        parts += ["CONSTRAINTS NOTED EARLIER (in my words)", *own_words]
    if plan:
        parts += ["PLAN", *plan]
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
