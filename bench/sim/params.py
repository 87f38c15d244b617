"""Parameters of the simulated model, validated by name.

Every parameter is documented in `conf/model/sim.yaml` (what it controls, which published
observation it models). Here they are only typed and range-checked: a missing or unknown key
is a ValueError that names the key, because a silently defaulted parameter would make a study
measure something other than what its config says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

# Mechanisms an ablation can switch off (`model.mechanisms.<name>: false`), and the parameters
# that switching one off sets: its effect must then disappear (tests/bench/sim/test_ablation.py).
MECHANISMS = {
    "recall_decay": {"rot_max_drop": 0.0, "middle_dip": 0.0},  # recall = recall_max wherever a fact sits
    "temptation": {"p_tempt": 0.0},  # no tidy-up is ever done
    "stale_memory": {"p_stale_replace_fail": 0.0, "p_stale_clobber": 0.0},  # no version confusion
    "summariser_loss": {"retain_plan": 1.0, "retain_task_invariant": 1.0, "retain_invariant": 1.0,
                        "retain_fact": 1.0, "retain_check": 1.0, "p_verbatim": 1.0},  # summaries keep all
    "exploration": {"p_look_history": 0.0, "p_check_changes": 0.0,
                    "p_reread_before_edit": 0.0},  # never looks at git or re-reads unprompted
    "competence": {"p_edit_error": 0.0},  # every edit batch is made as the oracle says
}


@dataclass(frozen=True)
class SimParams:
    # Recall (docs/design.md §7): p = recall_max * rot(L) * (1 - dip(L) * bump(r)), or recall_recent near the end.
    recall_max: float
    recall_recent: float
    recent_tokens: int
    rot_max_drop: float
    rot_half_tokens: float
    rot_shape: float
    middle_dip: float
    middle_shape: float
    middle_half_tokens: float
    # Action.
    p_tempt: float
    p_paraphrase: float
    p_stale_replace_fail: float
    p_stale_clobber: float
    p_edit_error: float
    # Exploration (bench/sim/explore.py): looking at durable facts through the tools.
    p_look_history: float
    history_depth: int
    p_check_changes: float
    p_reread_before_edit: float
    max_attempts: int
    max_edit_retries: int
    max_failure_reads: int
    # Summariser: per-kind retention.
    retain_plan: float
    retain_task_invariant: float
    retain_invariant: float
    retain_fact: float
    retain_check: float
    p_verbatim: float
    # Prefix cache.
    cache_block_tokens: int
    cache_min_tokens: int
    cache_ttl_s: float
    # Latency: ttft = a + b*uncached + c*cached; latency = ttft + output * decode.
    latency_base_s: float
    latency_s_per_uncached_token: float
    latency_s_per_cached_token: float
    decode_s_per_token: float

    @classmethod
    def from_mapping(cls, params: Mapping[str, Any], mechanisms: Mapping[str, Any] | None = None) -> SimParams:
        """`mechanisms`: name -> bool; each one switched off overrides its parameters (MECHANISMS)."""
        params = {**params, **ablated(mechanisms or {})}
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise ValueError(f"unknown sim parameter {unknown[0]!r} in model.params "
                             f"(known: {', '.join(names)})")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in params:
                raise ValueError(f"missing sim parameter {f.name!r} in model.params "
                                 "(see conf/model/sim.yaml for its meaning)")
            raw = params[f.name]
            if isinstance(raw, bool) or not isinstance(raw, int | float):
                raise ValueError(f"sim parameter {f.name!r} must be a number, got {raw!r}")
            if f.type == "int" and raw != int(raw):
                raise ValueError(f"sim parameter {f.name!r} must be an integer, got {raw!r}")
            values[f.name] = int(raw) if f.type == "int" else float(raw)
        out = cls(**values)
        out._check_ranges()
        return out

    def _check_ranges(self) -> None:
        unit = ("recall_max", "recall_recent", "rot_max_drop", "middle_dip", "p_tempt", "p_paraphrase",
                "p_stale_replace_fail", "p_stale_clobber", "p_edit_error",
                "p_look_history", "p_check_changes", "p_reread_before_edit", "retain_plan", "retain_task_invariant",
                "retain_invariant", "retain_fact", "retain_check", "p_verbatim")
        for name in unit:
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"sim parameter {name!r} is a probability in [0, 1], got {v}")
        for f in fields(self):
            if f.name not in unit and getattr(self, f.name) < 0:
                raise ValueError(f"sim parameter {f.name!r} must be >= 0, got {getattr(self, f.name)}")
        for name in ("rot_half_tokens", "middle_half_tokens", "cache_block_tokens", "max_attempts",
                     "history_depth"):
            if getattr(self, name) <= 0:
                raise ValueError(f"sim parameter {name!r} must be > 0, got {getattr(self, name)}")


def ablated(mechanisms: Mapping[str, Any]) -> dict[str, float]:
    """The parameter overrides of the mechanisms switched off."""
    unknown = sorted(set(mechanisms) - set(MECHANISMS))
    if unknown:
        raise ValueError(f"unknown mechanism {unknown[0]!r} in model.mechanisms (known: {', '.join(MECHANISMS)})")
    out: dict[str, float] = {}
    for name, on in mechanisms.items():
        if not isinstance(on, bool):
            raise ValueError(f"model.mechanisms.{name} must be true or false, got {on!r}")
        if not on:
            out.update(MECHANISMS[name])
    return out

