"""Family `record_upgrade`: finish a record-format migration that is half applied.

The plan, its traps and invariants are `generate` in plan.py; this package's own module holds
only the family's size knobs (`Size`), so that composing a config (which registers every
family's defaults, `tasks.store_knobs`) imports no family's code.
"""

from __future__ import annotations

from tasks.common.size import TaskSize


class Size(TaskSize):
    """task.size of record_upgrade (conf/task/record_upgrade.yaml)."""

    OVERHEAD, SPARE = 4, (-1, 1)
