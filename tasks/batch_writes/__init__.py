"""Family `batch_writes`: move row-by-row writes to one bulk write, package by package.

The plan, its traps and invariants are `generate` in plan.py; this package's own module holds
only the family's size knobs (`Size`), so that composing a config (which registers every
family's defaults, `tasks.store_knobs`) imports no family's code.
"""

from __future__ import annotations

from tasks.common.size import TaskSize


class Size(TaskSize):
    """task.size of batch_writes (conf/task/batch_writes.yaml)."""

    OVERHEAD, SPARE = 4, (-1, 1)
