"""Recall: which visible facts the simulated model actually uses, and its keyed random draws.

A fact in the context is recalled with probability

    p = recall_recent                                   if it was just seen
    p = recall_max * rot(L) * (1 - dip(L) * bump(r))    otherwise

with L the context length in tokens and r in [0, 1] the fact's relative position.
`rot(L)` falls with length (Chroma 2025, "Context Rot": accuracy degrades as input grows,
even on simple retrieval); `bump(r) = (4 r (1 - r)) ** middle_shape` is 0 at both ends and
1 in the middle, so recall is U-shaped in position (Liu et al. 2023, "Lost in the Middle");
`dip(L)` grows with L because the U is shallow in short contexts and deep in long ones.
A fact visible several times counts at its best-recalled occurrence.

A constraint protects by its content (docs/design.md, "Models"): the chance that the model
acts on a constraint about some code is the best, over the visible statements that cover it
(ctxlog/statements.py), of that statement's recall -- times `p_paraphrase` when it is a
summary's own paraphrase rather than a stated invariant line. Who wrote the statement (the
task, the harness, the model's hand-off, a summary) does not matter otherwise.

Common random numbers (docs/design.md §7): every draw is a hash of (seed, step, attempt, key,
purpose), never of the turn count or the strategy, and keys name content (a cleanup's
code, a statement's words, a file's hash), never an id only the harness knows. With one
uniform `u` per key and the rule `recalled iff u < p`, what is recalled in a longer or more
crowded context is also recalled in a shorter one with the same seed: two trials differ
only by their contexts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from bench.sim.params import SimParams
from bench.sim.perception import Beliefs, Pos, Said
from ctxlog.statements import covers

_SCALE = float(1 << 64)


def draw(seed: int, *key: object) -> float:
    """A uniform in [0, 1) fixed by the key: the sim's only source of randomness."""
    digest = hashlib.sha256("\x1f".join(map(str, (seed, *key))).encode()).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def recall_probability(p: SimParams, pos: Pos, beliefs: Beliefs) -> float:
    total = max(beliefs.total_tokens, 1)
    if pos.token >= min(beliefs.fresh_from, total - p.recent_tokens):
        return p.recall_recent
    length = float(total)
    k = p.rot_shape
    rot = 1.0 - p.rot_max_drop * length**k / (length**k + p.rot_half_tokens**k)
    r = min(max(pos.token / length, 0.0), 1.0)
    bump = (4.0 * r * (1.0 - r)) ** p.middle_shape
    dip = p.middle_dip * length / (length + p.middle_half_tokens)
    return max(0.0, p.recall_max * rot * (1.0 - dip * bump))


def best_probability(p: SimParams, positions: Iterable[Pos], beliefs: Beliefs) -> float:
    return max((recall_probability(p, pos, beliefs) for pos in positions), default=0.0)


def recalled(
    p: SimParams, key: str, positions: Iterable[Pos], beliefs: Beliefs, seed: int, step: str, attempt: int
) -> bool:
    return draw(seed, step, attempt, key, "recall") < best_probability(p, positions, beliefs)


def strength(p: SimParams, st: Said) -> float:
    """How much a statement binds, recalled: a summary's paraphrase counts with `p_paraphrase`."""
    return p.p_paraphrase if st.in_summary and not st.marked else 1.0


def protection(p: SimParams, anchors: tuple[str, ...], beliefs: Beliefs) -> float:
    """Chance the model acts on a constraint that names `anchors`: the best covering statement."""
    return max(
        (
            recall_probability(p, st.pos, beliefs) * strength(p, st)
            for st in beliefs.said
            if covers(st.text, anchors)
        ),
        default=0.0,
    )


def recalled_statements(
    p: SimParams, beliefs: Beliefs, candidates: Iterable[Said], seed: int, step: str, attempt: int
) -> list[Said]:
    """The candidates the model recalls, each content once (its first candidate): one draw per
    content, at its best occurrence anywhere in the context."""
    where: dict[str, list[Pos]] = {}
    for st in beliefs.said:
        where.setdefault(st.norm, []).append(st.pos)
    first: dict[str, Said] = {}
    for st in candidates:
        first.setdefault(st.norm, st)
    return [
        st
        for norm, st in first.items()
        if recalled(p, f"said:{norm}", where.get(norm, [st.pos]), beliefs, seed, step, attempt)
    ]
