"""Task families. Each family is a package with a pure `generate(seed, **size) -> TaskSpec`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from bench.core.knobs import Knobs, store
from bench.core.registry import Registry
from tasks.spec import TaskSpec

FAMILIES = Registry(
    "task.family",
    {
        "signature_migration": "tasks.signature_migration.plan:generate",
        "extract_module": "tasks.extract_module.plan:generate",
        "config_rename": "tasks.config_rename.plan:generate",
        "batch_writes": "tasks.batch_writes.plan:generate",
        "record_upgrade": "tasks.record_upgrade.plan:generate",
    },
    hint="choose one with task=<family> (e.g. task=signature_migration)",
    group="ctxbench.task_families",
)


def size_schema(family: str) -> type[Knobs] | None:
    """The family's `task.size` schema: the `Size` of the package that holds its generate (a
    built-in family's `tasks/<family>/__init__.py`, tasks/common/size.py), found without importing
    generate's own module, else the `Size` beside generate; None for a plug-in family that states
    none, whose generate validates its own knobs (docs/plugins.md)."""
    module, _, _ = FAMILIES.target(family).partition(":")
    package = module.rpartition(".")[0]
    if package and (schema := getattr(importlib.import_module(package), "Size", None)) is not None:
        return schema
    generate = FAMILIES.load(family)
    return getattr(importlib.import_module(generate.__module__), "Size", None)


def store_knobs() -> None:
    """Each built-in family's size defaults as the config node `/knobs/task/<family>` that
    conf/task/<family>.yaml extends (bench/core/knobs.py)."""
    for family in FAMILIES:
        schema = size_schema(family)
        if schema is not None:
            store(f"task/{family}", schema)


# Where `generate` gets a task when it is not generated now: a keeper installed by the trial's
# entry point when `task.kept` is on (bench/trial/runner.py loads bench/accel/kept_tasks.py by
# name). None, the reference path: every task is the family's pure generation.
Keeper = Callable[..., TaskSpec]
_keeper: Keeper | None = None


def keep_with(keeper: Keeper | None) -> None:
    """Serve `generate` and `from_id` from `keeper(family, seed, **size)`; None: generate afresh.
    One per process: every trial sets it from its own config (`task.kept`)."""
    global _keeper
    _keeper = keeper


def generate(family: str, seed: int, **size: Any) -> TaskSpec:
    """The family's task: generated now, or the installed keeper's (`keep_with`)."""
    if _keeper is not None:
        return _keeper(family, seed, **size)
    return fresh(family, seed, **size)


def fresh(family: str, seed: int, **size: Any) -> TaskSpec:
    """The task generated now, whatever keeper is installed: what tests of a family's purity compare."""
    return FAMILIES.load(family)(seed, **size)


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
