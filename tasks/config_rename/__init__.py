"""Family `config_rename`: rename a configuration key across code, docs and examples.

The plan, its traps and invariants are `generate` in plan.py; this package's own module holds
only the family's size knobs (`Size`), so that composing a config (which registers every
family's defaults, `tasks.store_knobs`) imports no family's code.
"""

from __future__ import annotations

from tasks.common.size import TaskSize


class Size(TaskSize):
    """task.size of config_rename (conf/task/config_rename.yaml)."""

    OVERHEAD, SPARE = 4, (-1, 1)
