"""Context strategies: how the model-visible context is built from durable state.

`make_strategy(cfg)` builds one from the `strategy` config group (`conf/strategy/<name>.yaml`):
`name` plus that strategy's keys. A strategy class names its schema in `config_class`: a frozen
pydantic model holding each knob's default, bounds and doc (bench/core/knobs.py); the YAML states
only what differs from it. A key set to null takes the default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.core import knobs
from bench.core.registry import Registry
from bench.core.types import plain
from strategies.base import Strategy

STRATEGIES = Registry(
    "strategy.name",
    {
        "raw": "strategies.raw:RawStrategy",
        "compaction": "strategies.compaction:CompactionStrategy",
        "ledger": "strategies.ledger:LedgerStrategy",
        "subagent": "strategies.subagent:SubagentStrategy",
        "masking": "strategies.masking:MaskingStrategy",
    },
    hint="choose one with strategy=<name> (see conf/strategy/)",
    group="ctxbench.strategies",
)
# What the loop reads off a strategy class besides build/summary_request (strategies/base.py).
HOOKS = ("name", "config_class", "requires_handoff", "fresh_session_per_step", "invariants_from")


def make_strategy(cfg: Mapping[str, Any]) -> Strategy:
    """The strategy named by `cfg["name"]`, configured by the other keys of `cfg`."""
    name = cfg.get("name")
    strategy_cls = STRATEGIES.load(name)
    missing = [hook for hook in HOOKS if not hasattr(strategy_cls, hook)]
    if missing:
        raise ValueError(
            f"strategy.name={name!r}: {strategy_cls.__name__} does not state {', '.join(missing)}; "
            "every strategy declares the hooks of strategies/base.py Strategy (docs/plugins.md)"
        )
    config = knobs.validate(
        strategy_cls.config_class, plain(cfg), "strategy", f"conf/strategy/{name}.yaml or the command line"
    )
    return strategy_cls(config)


def store_knobs() -> None:
    """Each built-in strategy's defaults as the config node its YAML extends (bench/core/knobs.py)."""
    for name in STRATEGIES:
        knobs.store(f"strategy/{name}", STRATEGIES.load(name).config_class)


__all__ = ["STRATEGIES", "make_strategy", "store_knobs"]
