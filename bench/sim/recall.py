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

Common random numbers (docs/design.md §7): every draw is a hash of (seed, step, attempt, fact id,
purpose), never of the turn count or the strategy. With one uniform `u` per fact and the
rule `recalled iff u < p`, a fact recalled in a longer or more crowded context is also
recalled in a shorter one with the same seed: two trials differ only by their contexts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from bench.sim.params import SimParams
from bench.sim.perception import Beliefs, Pos

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


def recalled(p: SimParams, key: str, positions: Iterable[Pos], beliefs: Beliefs, seed: int,
             step: str, attempt: int) -> bool:
    return draw(seed, step, attempt, key, "recall") < best_probability(p, positions, beliefs)


def recalled_fact_ids(p: SimParams, beliefs: Beliefs, seed: int, step: str, attempt: int) -> frozenset[str]:
    """Ids the oracle gets as `recalled_facts`: invariant ids and task fact ids as the task
    spells them (`Temptation.fact_id`, `Trap.protected_by`), plan lines as `step:<id>`."""
    positions: dict[str, list[Pos]] = {}
    for seen in beliefs.facts:
        positions.setdefault(seen.key, []).append(seen.pos)
    out = set()
    for key, where in positions.items():
        if recalled(p, key, where, beliefs, seed, step, attempt):
            out.add(key.split(":", 1)[1] if key.startswith(("inv:", "fact:")) else key)
    return frozenset(out)
