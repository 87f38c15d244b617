"""Context strategies: how the model-visible context is built from durable state.

`make_strategy(cfg)` builds one from the `strategy` config group (`conf/strategy/<name>.yaml`):
`name` plus that strategy's keys. A key set to null takes the strategy's default. A strategy
class names its frozen config dataclass in `config_class`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from bench.core.registry import Registry
from bench.core.types import plain
from strategies.base import Strategy

STRATEGIES = Registry("strategy.name", {
    "raw": "strategies.raw:RawStrategy",
    "compaction": "strategies.compaction:CompactionStrategy",
    "ledger": "strategies.ledger:LedgerStrategy",
    "subagent": "strategies.subagent:SubagentStrategy",
    "masking": "strategies.masking:MaskingStrategy",
}, hint="choose one with strategy=<name> (see conf/strategy/)", group="ctxbench.strategies")
# What the loop reads off a strategy class besides build/summary_request (strategies/base.py).
HOOKS = ("name", "config_class", "requires_handoff", "fresh_session_per_step", "invariants_from")


def make_strategy(cfg: Mapping[str, Any]) -> Strategy:
    """The strategy named by `cfg["name"]`, configured by the other keys of `cfg`."""
    name = cfg.get("name")
    strategy_cls = STRATEGIES.load(name)
    missing = [hook for hook in HOOKS if not hasattr(strategy_cls, hook)]
    if missing:
        raise ValueError(f"strategy.name={name!r}: {strategy_cls.__name__} does not state {', '.join(missing)}; "
                         "every strategy declares the hooks of strategies/base.py Strategy (docs/plugins.md)")
    config_cls = strategy_cls.config_class
    known = {f.name for f in dataclasses.fields(config_cls) if f.init}
    kwargs: dict[str, Any] = {}
    for key in cfg:
        if key not in known:
            raise ValueError(f"unknown key {key!r} for strategy {name!r} in conf/strategy/{name}.yaml; "
                             f"known keys: {', '.join(sorted(known))}")
        value = cfg[key]
        if value is not None:
            kwargs[str(key)] = plain(value)
    return strategy_cls(config_cls(**kwargs))


__all__ = ["STRATEGIES", "make_strategy"]
