"""ctxbench analysis: MLflow runs -> tables, tests, plots, report (docs/design.md §11).

Reads MLflow only; never imports the harness (bench, tasks, strategies).

    from analysis import load_runs
    runs = load_runs("sqlite:///results/mlflow.db", "ctxbench", study="demo")
    runs.trials   # one row per FINISHED trial
    runs.curves   # one row per (trial, turn)
"""

from analysis.load import Runs, load_runs

__all__ = ["Runs", "load_runs"]
