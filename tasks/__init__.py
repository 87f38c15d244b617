"""Task families. Each family is a module with a pure `generate(seed, **size) -> TaskSpec`."""

from __future__ import annotations

import importlib
from typing import Any

from tasks.spec import TaskSpec

FAMILIES = ("signature_migration", "extract_module", "config_rename")


def generate(family: str, seed: int, **size: Any) -> TaskSpec:
    if family not in FAMILIES:
        raise ValueError(f"unknown task family {family!r}; choose one of {', '.join(FAMILIES)} "
                         "(e.g. task=signature_migration)")
    module = importlib.import_module(f"tasks.{family}")
    return module.generate(seed, **size)


def task_id(family: str, seed: int, **size: Any) -> str:
    """`family/seed[/k=v...]`: enough to regenerate the task anywhere (the sim reads it from context)."""
    knobs = "".join(f"/{k}={size[k]}" for k in sorted(size))
    return f"{family}/{seed}{knobs}"


def from_id(tid: str) -> TaskSpec:
    family, seed, *knobs = tid.split("/")
    size: dict[str, Any] = {}
    for knob in knobs:
        key, value = knob.split("=", 1)
        size[key] = int(value) if value.lstrip("-").isdigit() else value
    return generate(family, int(seed), **size)
