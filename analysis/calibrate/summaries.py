"""What the summaries actually written kept, per kind of fact: the summariser's retention rates.

Each `compaction` event holds the summary; the `context` record logged just before it (purpose
`compaction`) holds what the summariser was shown. The candidates and their kinds restate
bench/sim/summary.py:

  retain_plan            `[step:ID] title` plan lines (kept: the summary has `[step:ID] `)
  retain_task_invariant  constraint sentences of the task message
  retain_invariant       `[inv:ID] text` lines stated elsewhere (a step's established invariants)
  retain_fact            other constraint sentences (hand-off notes, instructions)
  retain_check           check verdicts: the newest of each earlier step, and each failure of the
                         current one (kept: a `[check:ID ...]` line in the summary)
  p_verbatim             of the kept `[inv:ID]` lines, the share copied with their marker

A sentence counts as kept when a summary sentence has the same content (marker dropped,
whitespace and case ignored). `match="words"`, for real summarisers, which reword
(docs/calibration.md), also pairs each remaining summary sentence with at most one fact it shares
most of its words with (`_pairs`), and counts an `[inv:ID]` line as copied verbatim when the
summary has a line headed `[inv:ID]`. The compaction request's own sentences are not
candidates. Draws are keyed like the sim's (seed, content, passed checks in view), so a fact
compacted twice at the same stage counts once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from analysis.calibrate.reading import check_lines, normal, perceive, statements, visible_text
from ctxlog import events as ev
from ctxlog.reader import Log

KINDS = (
    "retain_plan",
    "retain_task_invariant",
    "retain_invariant",
    "retain_fact",
    "retain_check",
    "p_verbatim",
)
_PLAN_RE = re.compile(r"^\[step:(?P<id>[A-Za-z0-9_.-]+)\] (?P<title>.+)$", re.M)
_INV_ID = re.compile(r"^\[inv:([A-Za-z0-9_.-]+)\] ")
WORDS = 0.7  # --match words: the least word overlap (Jaccard) of a reworded fact and its summary sentence


@dataclass(frozen=True)
class Kept:
    kind: str
    y: bool
    key: tuple


def retention(source: Log | list[dict[str, Any]], match: str = "exact") -> list[Kept]:
    log = Log.read(source)  # the one reader: the summariser's context rebuilt
    seed = log.start.seed
    shown: tuple[dict[str, Any], ...] | None = None
    out: list[Kept] = []
    for e in log.events:
        if isinstance(e, ev.Context) and e.purpose == "compaction":
            shown = log.rebuild(e)
        elif isinstance(e, ev.Compaction) and shown is not None:
            out += _one(list(shown), e.summary, seed, match)
            shown = None
    return out


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_]+", text.lower()))


def _one(context: list[dict[str, Any]], summary: str, seed, match: str) -> list[Kept]:
    ctx = perceive(context[:-1])  # the last message is the compaction request itself
    passed = sum(1 for _, ok in ctx.checks if ok)
    said = [(normal(s), s) for _, s in statements(summary)]
    norms = {n for n, _ in said}
    marked_norms = {n for n, s in said if _INV_ID.match(s)}
    ids = {m.group(1) for _, s in said if (m := _INV_ID.match(s))}  # ids of the summary's own [inv:ID] lines
    out: list[Kept] = []
    first: dict[str, Any] = {}
    for st in ctx.said:
        if st.role != "system":
            first.setdefault(st.norm, st)
    reworded = _pairs(first, said) if match == "words" else set()
    for norm, st in first.items():
        kind = "retain_task_invariant" if st.in_task else "retain_invariant" if st.marked else "retain_fact"
        inv = _INV_ID.match(st.text)
        verbatim = norm in marked_norms or bool(match == "words" and inv and inv.group(1) in ids)
        kept = verbatim or norm in norms or norm in reworded
        out.append(Kept(kind, kept, (seed, "said:" + norm, passed)))
        if kept and st.marked:
            out.append(Kept("p_verbatim", verbatim, (seed, "verbatim:" + norm, passed)))
    texts = "\n".join(visible_text(m) for m in context[:-1])
    plan = dict.fromkeys(m.group("id") for m in _PLAN_RE.finditer(texts))
    kept_plan = set(m.group("id") for m in _PLAN_RE.finditer(summary))
    out += [Kept("retain_plan", sid in kept_plan, (seed, "step:" + sid, passed)) for sid in plan]
    newest = dict(ctx.checks)
    in_summary = check_lines(summary)
    for sid in newest:
        if sid != ctx.step:
            out.append(
                Kept("retain_check", any(s == sid for s, _ in in_summary), (seed, "check:" + sid, passed))
            )
    if ctx.step is not None and not newest.get(ctx.step, False):
        failures = sum(1 for s, ok in ctx.checks if s == ctx.step and not ok)
        kept = min(failures, sum(1 for s, ok in in_summary if s == ctx.step and not ok))
        out += [
            Kept("retain_check", i < kept, (seed, f"check:{ctx.step}:{i}", passed)) for i in range(failures)
        ]
    return out


def _pairs(facts: dict[str, Any], said: list[tuple[str, str]]) -> set[str]:
    """Facts a summary keeps in other words: each summary sentence kept at most one fact, the one
    it shares most words with (Jaccard >= WORDS), best pairs first; a sentence copied word for word
    already stands for its own fact. Greedy one-to-one, so a fact and its near-twin restatement do
    not both count as kept because one of them was."""
    exact = {n for n, _ in said}
    free = [(n, _words(n)) for n, _ in said]
    pairs = []
    for norm in facts:
        if norm in exact:
            continue
        mine = _words(norm)
        for i, (other, theirs) in enumerate(free):
            if other in facts or not mine:
                continue
            j = len(mine & theirs) / len(mine | theirs)
            if j >= WORDS:
                pairs.append((j, norm, i))
    kept, used = set(), set()
    for _, norm, i in sorted(pairs, reverse=True):
        if norm not in kept and i not in used:
            kept.add(norm)
            used.add(i)
    return kept
