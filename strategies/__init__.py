"""Context strategies: how the model-visible context is built from durable state.

`make_strategy(cfg)` builds one from the `strategy` config group (`conf/strategy/<name>.yaml`):
`name` plus that strategy's keys. A key set to null takes the strategy's default.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from typing import Any

from strategies.base import Strategy

# name -> (module, config class, strategy class); modules are imported only when used.
STRATEGIES: dict[str, tuple[str, str, str]] = {
    "raw": ("strategies.raw", "RawConfig", "RawStrategy"),
    "compaction": ("strategies.compaction", "CompactionConfig", "CompactionStrategy"),
    "ledger": ("strategies.ledger", "LedgerConfig", "LedgerStrategy"),
    "subagent": ("strategies.subagent", "SubagentConfig", "SubagentStrategy"),
    "masking": ("strategies.masking", "MaskingConfig", "MaskingStrategy"),
}


def make_strategy(cfg: Mapping[str, Any]) -> Strategy:
    """The strategy named by `cfg["name"]`, configured by the other keys of `cfg`."""
    name = cfg.get("name")
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}: expected one of {', '.join(STRATEGIES)}")
    module_name, config_name, class_name = STRATEGIES[name]
    module = importlib.import_module(module_name)
    config_cls = getattr(module, config_name)
    known = {f.name for f in dataclasses.fields(config_cls) if f.init}
    kwargs: dict[str, Any] = {}
    for key in cfg:
        if key not in known:
            raise ValueError(f"unknown key {key!r} for strategy {name!r} in conf/strategy/{name}.yaml; "
                             f"known keys: {', '.join(sorted(known))}")
        value = cfg[key]
        if value is not None:
            kwargs[str(key)] = _plain(value)
    return getattr(module, class_name)(config_cls(**kwargs))


def _plain(value: Any) -> Any:
    """OmegaConf containers (or any mapping / sequence) as plain dicts and tuples."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "__iter__"):
        return tuple(_plain(v) for v in value)
    return value


__all__ = ["STRATEGIES", "make_strategy"]
