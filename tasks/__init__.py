"""Task families. Each family is a package with a pure `generate(seed, **size) -> TaskSpec`."""

from __future__ import annotations

import dataclasses
import functools
import importlib
from typing import Any

from bench.core import knobs
from bench.core.registry import Registry
from tasks.spec import TaskSpec

FAMILIES = Registry(
    "task.family",
    {
        "signature_migration": "tasks.signature_migration:generate",
        "extract_module": "tasks.extract_module:generate",
        "config_rename": "tasks.config_rename:generate",
        "batch_writes": "tasks.batch_writes:generate",
        "record_upgrade": "tasks.record_upgrade:generate",
    },
    hint="choose one with task=<family> (e.g. task=signature_migration)",
    group="ctxbench.task_families",
)


def size_schema(family: str) -> type[knobs.Knobs] | None:
    """The family's `task.size` schema: the `Size` beside its generate (tasks/common/size.py), or
    None for a plug-in family, whose generate validates its own knobs (docs/plugins.md)."""
    generate = FAMILIES.load(family)
    return getattr(importlib.import_module(generate.__module__), "Size", None)


def store_knobs() -> None:
    """Each built-in family's size defaults as the config node `/knobs/task/<family>` that
    conf/task/<family>.yaml extends (bench/core/knobs.py)."""
    for family in FAMILIES:
        schema = size_schema(family)
        if schema is not None:
            knobs.store(f"task/{family}", schema)


# Tasks kept per process. The 16 strategy x arm cells of a grid face the same task, and the harness
# and the simulated model each ask for it (~16 ms a generation, twice a trial). A task is frozen
# data and its oracle keeps nothing a caller can change, so one generation serves them all, and
# its oracle's answers are kept too (tasks/answers.py).
# 320 covers the 300 tasks of the 100-seed grid, which a worker meets again ~150 jobs later
# (~0.2 MB a task).
KEPT_TASKS = 320


def generate(family: str, seed: int, **size: Any) -> TaskSpec:
    """The family's task (kept: `fresh` generates it again)."""
    key = (family, seed, tuple(sorted(size.items())))
    try:
        hash(key)
    except TypeError:  # a knob that cannot be a key (a list, say): the family says what is wrong
        return fresh(family, seed, **size)
    return _kept(key)


@functools.lru_cache(maxsize=KEPT_TASKS)
def _kept(key: tuple[str, int, tuple[tuple[str, Any], ...]]) -> TaskSpec:
    from tasks.answers import KeptAnswers

    family, seed, size = key
    task = fresh(family, seed, **dict(size))
    return dataclasses.replace(task, oracle=KeptAnswers(task.oracle))  # asked the same again and again


def fresh(family: str, seed: int, **size: Any) -> TaskSpec:
    """The task generated now, never a kept one: what tests of a family's purity compare."""
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
