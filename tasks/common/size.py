"""`task.size`: how big a family's task is, stated once (bench/core/knobs.py; docs/design.md §4).

Every built-in family is a migration carried out package by package, so their size knobs are
the same three with the same bounds; each family subclasses `TaskSize` as `Size` beside its `generate`,
saying how many of its steps are not batches (`OVERHEAD`), how many modules beyond two per
batch the seed may add (`SPARE`, inclusive) and, where it differs, its default. The family's
generate validates its knobs with it (`skeleton.frame`), the config with it too (`TaskConfig`
in bench/config.py), and `conf/task/<family>.yaml` extends its defaults (`tasks.store_knobs`).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, ValidationInfo, field_validator

from bench.core.knobs import Integer, Knobs

Steps = Annotated[
    Integer, Field(ge=6, le=16, description="plan steps; steps - OVERHEAD of them migrate a package each")
]
Callers = Annotated[Integer, Field(ge=1, le=64)]
Filler = Annotated[Integer, Field(ge=0, le=10, description="helper functions per module: how big files are")]


class TaskSize(Knobs):
    """A family's size knobs; a key set to null takes its default (callers': drawn by seed)."""

    OVERHEAD: ClassVar[int]  # steps that are not one package's batch (set-up, tidy, docs, last)
    SPARE: ClassVar[tuple[int, int]]  # modules the seed adds to two per batch, lowest..highest

    steps: Steps = 12
    callers: Callers | None = Field(
        default=None,
        description="modules over the packages, at least one per batch; null = the family's default: "
        "2 per batch plus a seeded draw from SPARE",
    )
    filler: Filler = 5

    @field_validator("callers")
    @classmethod
    def _one_module_per_batch(cls, callers: int | None, info: ValidationInfo) -> int | None:
        steps = info.data.get("steps")  # absent when steps itself is wrong: that error is the one told
        if callers is not None and steps is not None and callers < steps - cls.OVERHEAD:
            raise ValueError(f"must be >= {steps - cls.OVERHEAD} (one module per batch at steps={steps})")
        return callers
