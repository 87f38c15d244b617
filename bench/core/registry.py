"""Named choices, imported only when chosen: the one way plug-ins register (docs/design.md §5).

Strategies, providers, sandboxes and task families each keep one `Registry` next to the
code that picks from it, mapping a config name to `"module:attribute"`:

    PROVIDERS = Registry("model.provider", {
        "sim": "bench.sim.provider:SimProvider",
        "anthropic": "bench.providers.anthropic:AnthropicProvider",
    })
    cls = PROVIDERS.load(model_cfg["provider"])

Adding a choice is one line. Nothing is imported until `load` picks it, so a trial with the
simulated model never imports a vendor SDK, and a bad name fails with one line that names
the key, the bad value and the allowed ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any


class UnknownChoice(ValueError):
    """A config named a choice no registry holds."""


class Registry(Mapping[str, str]):
    """`name -> "module:attribute"`, in the order given; iterating yields the names."""

    def __init__(self, key: str, entries: Mapping[str, str], hint: str = "") -> None:
        for name, target in entries.items():
            module, sep, attr = target.partition(":")
            if not (module and sep and attr):
                raise ValueError(f"{key} entry {name!r}: {target!r} is not 'module:attribute'")
        self.key = key  # the config key the name comes from, e.g. "model.provider"
        self.hint = hint  # how to choose, e.g. "pick a model with model=<name> (see conf/model/)"
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> str:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def check(self, name: object) -> str:
        """`name` itself, or UnknownChoice naming the bad value and the allowed ones."""
        if not isinstance(name, str) or name not in self._entries:
            hint = f"; {self.hint}" if self.hint else ""
            raise UnknownChoice(f"{self.key}={name!r} is not one of {', '.join(self._entries)}{hint}")
        return name

    def load(self, name: object) -> Any:
        """Import the module behind `name` and return the attribute it names."""
        module, _, attr = self._entries[self.check(name)].partition(":")
        return getattr(importlib.import_module(module), attr)
