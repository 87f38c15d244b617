"""Family `signature_migration`: the scenario that motivates ctxbench.

The plan, its traps and invariants are `generate` in plan.py; this package's own module holds
only the family's size knobs (`Size`), so that composing a config (which registers every
family's defaults, `tasks.store_knobs`) imports no family's code.
"""

from __future__ import annotations

from tasks.common.size import TaskSize


class Size(TaskSize):
    """task.size of signature_migration (conf/task/signature_migration.yaml)."""

    OVERHEAD, SPARE = 5, (1, 3)
