"""Family `extract_module`: move a cohesive group of functions into a new package.

The plan, its traps and invariants are `generate` in plan.py; this package's own module holds
only the family's size knobs (`Size`), so that composing a config (which registers every
family's defaults, `tasks.store_knobs`) imports no family's code.
"""

from __future__ import annotations

from tasks.common.size import Filler, TaskSize


class Size(TaskSize):
    """task.size of extract_module (conf/task/extract_module.yaml)."""

    OVERHEAD, SPARE = 5, (2, 4)
    filler: Filler = 6
