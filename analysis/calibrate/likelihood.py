"""The sim's recall, temptation and stale-edit probabilities as one likelihood over observations.

Restated from bench/sim/recall.py (`recall_probability`, `protection`) and bench/sim/action.py
(`_tidy_ups`, `_edits`); tests/analysis/calibrate/test_calibrate.py checks it against the sim's own
logged protection values. A fact at token `x` of a context of `L` tokens is recalled with

    p = recall_recent                                   if x >= min(fresh_from, L - recent_tokens)
    p = recall_max * rot(L) * (1 - dip(L) * bump(x/L))  otherwise
    rot(L)  = 1 - rot_max_drop * L^k / (L^k + rot_half_tokens^k),   k = rot_shape
    bump(r) = (4 r (1 - r))^middle_shape,   dip(L) = middle_dip * L / (L + middle_half_tokens)

and an observation's probability is, with m the best occurrence (observe.py):
    handoff  m;   tidy  p_tempt * (1 - m), paraphrases counting p_paraphrase * recall;
    stale_replace  (1 - m) * p_stale_replace_fail;   stale_write  (1 - m) * p_stale_clobber.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from analysis.calibrate.observe import Obs

# Fitted from the observations when they inform them; the curve's shape parameters are not.
FREE = (
    "recall_max",
    "recall_recent",
    "rot_max_drop",
    "middle_dip",
    "p_tempt",
    "p_paraphrase",
    "p_stale_replace_fail",
    "p_stale_clobber",
)
SHAPE = ("recent_tokens", "rot_half_tokens", "rot_shape", "middle_shape", "middle_half_tokens")
KINDS = ("handoff", "tidy", "stale_replace", "stale_write")
_EPS = 1e-9


@dataclass
class Design:
    """Observations as arrays: one row per occurrence, grouped by observation."""

    kind: np.ndarray  # per observation, index into KINDS
    y: np.ndarray
    length: np.ndarray
    fresh: np.ndarray
    occ_obs: np.ndarray  # per occurrence: its observation
    occ_x: np.ndarray  # token position
    occ_para: np.ndarray  # binds only as a paraphrase
    n: int
    starts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # first occurrence of each
    owners: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))  # ... and its observation
    _shape: dict = field(default_factory=dict)  # shape parameters -> (recent, rot factor, dip factor)

    def pieces(self, p: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What `recall` computes from the shape parameters alone, cached: the fit varies the rest."""
        key = tuple(p[s] for s in SHAPE)
        if key not in self._shape:
            o = self.occ_obs
            total = np.maximum(self.length[o], 1.0)
            recent = self.occ_x >= np.minimum(self.fresh[o], total - p["recent_tokens"])
            k = p["rot_shape"]
            rot = total**k / (total**k + p["rot_half_tokens"] ** k)
            r = np.clip(self.occ_x / total, 0.0, 1.0)
            dip = (4.0 * r * (1.0 - r)) ** p["middle_shape"] * total / (total + p["middle_half_tokens"])
            self._shape = {key: (recent, rot, dip)}
        return self._shape[key]

    @classmethod
    def of(cls, obs: Sequence[Obs]) -> Design:
        rows = [(i, x, para) for i, o in enumerate(obs) for x, para in o.occ]
        occ = np.array(rows, dtype=float).reshape(-1, 3)
        owner = occ[:, 0].astype(int)
        starts = (
            np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if len(owner) else np.zeros(0, dtype=int)
        )
        return cls(
            np.array([KINDS.index(o.kind) for o in obs], dtype=int),
            np.array([o.y for o in obs], dtype=float),
            np.array([o.length for o in obs], dtype=float),
            np.array([o.fresh_from for o in obs], dtype=float),
            owner,
            occ[:, 1],
            occ[:, 2].astype(bool),
            len(obs),
            starts,
            owner[starts],
        )


def recall(p: Mapping[str, float], x: np.ndarray, length: np.ndarray, fresh: np.ndarray) -> np.ndarray:
    total = np.maximum(length, 1.0)
    recent = x >= np.minimum(fresh, total - p["recent_tokens"])
    k = p["rot_shape"]
    rot = 1.0 - p["rot_max_drop"] * total**k / (total**k + p["rot_half_tokens"] ** k)
    r = np.clip(x / total, 0.0, 1.0)
    bump = (4.0 * r * (1.0 - r)) ** p["middle_shape"]
    dip = p["middle_dip"] * total / (total + p["middle_half_tokens"])
    far = np.maximum(0.0, p["recall_max"] * rot * (1.0 - dip * bump))
    return np.where(recent, p["recall_recent"], far)


def best(p: Mapping[str, float], d: Design) -> np.ndarray:
    """m per observation: the best occurrence's recall (times p_paraphrase for a paraphrase)."""
    m = np.zeros(d.n)
    if len(d.occ_obs):
        recent, rot, dip = d.pieces(p)
        far = np.maximum(
            0.0, p["recall_max"] * (1.0 - p["rot_max_drop"] * rot) * (1.0 - p["middle_dip"] * dip)
        )
        v = np.where(recent, p["recall_recent"], far) * np.where(d.occ_para, p["p_paraphrase"], 1.0)
        m[d.owners] = np.maximum.reduceat(v, d.starts)
    return m


def probability(p: Mapping[str, float], d: Design) -> np.ndarray:
    m = best(p, d)
    out = np.select(
        [d.kind == 0, d.kind == 1, d.kind == 2, d.kind == 3],
        [m, p["p_tempt"] * (1 - m), (1 - m) * p["p_stale_replace_fail"], (1 - m) * p["p_stale_clobber"]],
    )
    return np.clip(out, _EPS, 1 - _EPS)


def nll(p: Mapping[str, float], d: Design) -> float:
    q = probability(p, d)
    return float(-np.sum(d.y * np.log(q) + (1 - d.y) * np.log1p(-q)))


def informing_rows(p: Mapping[str, float], d: Design, name: str) -> np.ndarray:
    """Which observations' probability moves with a parameter, judged at `p` with every
    probability pulled inside [0.05, 0.95] (at a boundary a parameter can look idle that is not)."""
    p = {k: (min(max(v, 0.05), 0.95) if k in FREE else v) for k, v in p.items()}
    step = (-0.01 if p[name] > 0.5 else 0.01) * (1.0 if name in FREE else max(abs(p[name]), 1.0))
    return np.abs(probability({**p, name: p[name] + step}, d) - probability(p, d)) > 1e-10


def informing(p: Mapping[str, float], d: Design, names: Sequence[str]) -> dict[str, int]:
    return {name: int(np.sum(informing_rows(p, d, name))) for name in names}


def nll_grad(p: Mapping[str, float], d: Design, names: Sequence[str]) -> tuple[float, np.ndarray]:
    """The negative log-likelihood and its gradient in `names` (each in FREE), analytically: the
    best occurrence of each observation carries the derivative of m (a maximum is smooth almost
    everywhere)."""
    q = probability(p, d)
    grad_q: dict[str, np.ndarray] = {name: np.zeros(d.n) for name in names}
    m = np.zeros(d.n)
    dm = {
        name: np.zeros(d.n)
        for name in ("recall_recent", "recall_max", "rot_max_drop", "middle_dip", "p_paraphrase")
    }
    if len(d.occ_obs):
        recent, rot, dip = d.pieces(p)
        a, b = 1.0 - p["rot_max_drop"] * rot, 1.0 - p["middle_dip"] * dip
        raw = p["recall_max"] * a * b
        far = (~recent) & (raw > 0)
        r = np.where(recent, p["recall_recent"], np.maximum(raw, 0.0))
        s = np.where(d.occ_para, p["p_paraphrase"], 1.0)
        v = r * s
        m[d.owners] = np.maximum.reduceat(v, d.starts)
        top = np.flatnonzero(v == m[d.occ_obs])
        _, first = np.unique(d.occ_obs[top], return_index=True)
        j = top[first]
        o = d.occ_obs[j]
        dm["recall_recent"][o] = recent[j] * s[j]
        dm["recall_max"][o] = far[j] * a[j] * b[j] * s[j]
        dm["rot_max_drop"][o] = far[j] * -p["recall_max"] * rot[j] * b[j] * s[j]
        dm["middle_dip"][o] = far[j] * -p["recall_max"] * a[j] * dip[j] * s[j]
        dm["p_paraphrase"][o] = d.occ_para[j] * r[j]
    dq_dm = np.select(
        [d.kind == 0, d.kind == 1, d.kind == 2, d.kind == 3],
        [
            np.ones(d.n),
            -p["p_tempt"] * np.ones(d.n),
            -p["p_stale_replace_fail"] * np.ones(d.n),
            -p["p_stale_clobber"] * np.ones(d.n),
        ],
    )
    for name in names:
        if name in dm:
            grad_q[name] = dq_dm * dm[name]
    for name, kind in (("p_tempt", 1), ("p_stale_replace_fail", 2), ("p_stale_clobber", 3)):
        if name in grad_q:
            grad_q[name] = np.where(d.kind == kind, 1.0 - m, 0.0)
    inside = (q > _EPS) & (q < 1 - _EPS)  # a clipped probability does not move
    dl = np.where(inside, -(d.y / q - (1 - d.y) / (1 - q)), 0.0)
    f = float(-np.sum(d.y * np.log(q) + (1 - d.y) * np.log1p(-q)))
    return f, np.array([float(dl @ grad_q[name]) for name in names])
