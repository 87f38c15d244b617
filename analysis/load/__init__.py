"""Load: MLflow runs into frames (`runs.py`), a run's large event-log values (`artifacts.py`), each study's plan (`plans.py`), every planned
trial accounted for (`accounting.py`), and how a study's seeds were chosen (`labels.py`).

Ground floor (with `settings`, `render`, `stats` and `power`): it imports no other room.
"""

from analysis.load.artifacts import run_blobs
from analysis.load.runs import (
    ARM_ORDER,
    CELL,
    IDENTITY,
    PAIR_KEY,
    POINT,
    STRATEGY_ORDER,
    TASK_KEY,
    Runs,
    load_runs,
    sort_cells,
    sqlite_path,
)

__all__ = [
    "run_blobs",
    "ARM_ORDER",
    "CELL",
    "IDENTITY",
    "PAIR_KEY",
    "POINT",
    "STRATEGY_ORDER",
    "TASK_KEY",
    "Runs",
    "load_runs",
    "sort_cells",
    "sqlite_path",
]
