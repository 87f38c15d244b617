"""Named choices, imported only when chosen: the one way plug-ins register (docs/design.md §5,
docs/plugins.md).

Strategies, providers, sandboxes and task families each keep one `Registry` next to the
code that picks from it, mapping a config name to `"module:attribute"`:

    PROVIDERS = Registry("model.provider", {
        "sim": "bench.sim.provider:SimProvider",
        "anthropic": "bench.providers.anthropic:AnthropicProvider",
    }, group="ctxbench.providers")
    cls = PROVIDERS.load(model_cfg["provider"])

A choice is found in this order: a built-in name; an entry point of another installed
package in the registry's `group`; a dotted path `"package.module:attribute"` written in the
config itself. Nothing is imported until `load` picks it, so a trial with the simulated model
never imports a vendor SDK, and a bad choice fails with one line that names the key, the bad
value and what would be accepted.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import Any

# `package.module:attribute` (the attribute may be dotted: `module:Outer.Inner`).
_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


class UnknownChoice(ValueError):
    """A config named a choice no registry holds, or one that cannot be imported."""


class Registry(Mapping[str, str]):
    """`name -> "module:attribute"`, in the order given; iterating yields the built-in names."""

    def __init__(self, key: str, entries: Mapping[str, str], hint: str = "", group: str = "") -> None:
        for name, target in entries.items():
            if not _DOTTED.match(target):
                raise ValueError(f"{key} entry {name!r}: {target!r} is not 'module:attribute'")
        self.key = key  # the config key the name comes from, e.g. "model.provider"
        self.hint = hint  # how to choose, e.g. "pick a model with model=<name> (see conf/model/)"
        self.group = group  # the entry-point group other packages register under
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> str:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def plugins(self) -> dict[str, str]:
        """Entry points of installed packages in this registry's group: name -> target."""
        if not self.group:
            return {}
        return {ep.name: ep.value for ep in entry_points(group=self.group)}

    def target(self, name: object) -> str:
        """The `module:attribute` that `name` stands for, or UnknownChoice in one line."""
        if isinstance(name, str):
            if name in self._entries:
                return self._entries[name]
            found = self.plugins().get(name)
            if found is not None:
                return found
            if _DOTTED.match(name):
                return name
        plugins = sorted(self.plugins())
        also = f" or an installed plug-in ({', '.join(plugins)})" if plugins else ""
        hint = f"; {self.hint}" if self.hint else ""
        raise UnknownChoice(
            f"{self.key}={name!r} is not one of {', '.join(self._entries)}{also}, "
            f"nor a 'package.module:attribute' path{hint}"
        )

    def check(self, name: object) -> str:
        """`name` itself when it names a choice (built in, entry point or dotted path)."""
        self.target(name)
        return str(name)

    def load(self, name: object) -> Any:
        """Import the module behind `name` and return the attribute it names."""
        target = self.target(name)
        module_name, _, attr = target.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError as exc:
            raise UnknownChoice(
                f"{self.key}={name!r}: cannot import {module_name!r} ({exc}); "
                f"install the package that provides it, or fix the path"
            ) from exc
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise UnknownChoice(
                    f"{self.key}={name!r}: module {module_name!r} has no attribute "
                    f"{attr!r}; fix the name after the ':'"
                )
            obj = getattr(obj, part)
        return obj
