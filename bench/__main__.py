"""`python -m bench [overrides]` (or `ctxbench-run`): one trial; `python -m bench -m ...`: a sweep."""

from __future__ import annotations

import signal
import sys
import threading
from typing import TYPE_CHECKING

import hydra
from omegaconf import DictConfig

from bench.config import CONF_DIR

if TYPE_CHECKING:
    from bench.trial.runner import Prepared, TrialResult

# A plain run's config and parts as bench.preflight validated and built them, for its trial.
_prepared: Prepared | None = None


def _terminate(signum, frame):  # a SIGTERM (e.g. from a scheduler) ends the trial as KILLED
    raise KeyboardInterrupt(f"signal {signum}")


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> TrialResult:
    """The TrialResult is the job's return value: in a multirun, Hydra hands it to the study
    callback's on_job_end (in the worker that ran the trial), which records the outcome."""
    from bench.trial.runner import run

    if threading.current_thread() is threading.main_thread():  # not in hydra/launcher=ctxbench_threads
        signal.signal(signal.SIGTERM, _terminate)
    result = run(cfg, _prepared)
    if result.status == "budget_exhausted":
        print("not started: the study's budget is spent (study.budget_usd / study.budget_tokens)")
        return result
    if result.skipped:
        print(f"skipped: already finished as run {result.run_id} ({result.status}); resume=false reruns it")
        return result
    print(
        f"{result.status}{' (' + result.failure_reason + ')' if result.failure_reason else ''}: "
        f"{result.turns} turns, run {result.run_id}, events {result.events_path}"
    )
    return result


def cli() -> None:
    """`python -m bench` and the `ctxbench-run` console script: the same argv reaches the same
    preflight and then Hydra (whose job name is `__main__` either way: hydra.main names it after
    this module)."""
    global _prepared
    from bench import preflight

    _prepared = preflight.check(sys.argv[1:])  # bad input: one line, exit 2, before Hydra writes anything
    main()


if __name__ == "__main__":
    cli()
