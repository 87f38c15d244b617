"""Many trials in flight in one process: each job a thread (docs/scaling.md §2).

A real-model trial spends nearly all its time waiting for its provider; a worker process per
trial in flight costs ~300 MB, a thread a few. Jobs are composed here, in order, by the sweep's
loader (bench.accel.compose, so each distinct group choice once), then `n_jobs` threads run them
through Hydra's own `run_job` (callbacks, the job's output dir and `.hydra/` files, its return
value), as joblib's workers do. What Hydra keeps per process is not per thread, so:

- the working directory never changes (`hydra.job.chdir` must stay false);
- logging is configured once, here, not per job (one log for the study, not one per job dir);
- `HydraConfig` (a process-wide singleton) holds whichever job set it last: nothing a trial
  reads resolves through it (the trial config has no `${hydra:...}`);
- file descriptors are the process's: nothing a trial spawns names one of the parent's by number
  (another trial's thread may close it before the fork; bench/sandbox/local.py's judge channel);
- a trial's watchdog fires by an asynchronous exception, not SIGALRM (bench/trial/watchdog.py),
  and a trial cannot install a SIGTERM handler; SIGTERM ends the launcher's wait, and the
  trials still in flight are marked KILLED by the next resume (their pid is gone).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)


class ThreadsLauncher(Launcher):
    def __init__(self, n_jobs: int = 128) -> None:
        if not isinstance(n_jobs, int) or isinstance(n_jobs, bool) or n_jobs < 1:
            raise ValueError(
                f"hydra.launcher.n_jobs must be an integer >= 1 (trials in flight), got {n_jobs!r}"
            )
        self.n_jobs = n_jobs
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        assert self.config is not None and self.hydra_context is not None and self.task_function is not None
        if self.config.hydra.job.chdir:
            raise ValueError(
                "hydra/launcher=ctxbench_threads runs jobs as threads of one process, which share "
                "one working directory: set hydra.job.chdir=false"
            )
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        log.info("ctxbench threads launcher: %d jobs, %d in flight", len(job_overrides), self.n_jobs)
        configs = []
        for i, overrides in enumerate(job_overrides):
            idx = initial_job_idx + i
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
            cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(cfg):
                cfg.hydra.job.id = f"{cfg.hydra.job.name}_{idx}"
                cfg.hydra.job.num = idx
            configs.append(cfg)
        with ThreadPoolExecutor(
            max_workers=min(self.n_jobs, max(len(configs), 1)), thread_name_prefix="ctxbench-trial"
        ) as pool:
            return list(pool.map(self._run, configs))

    def _run(self, cfg: DictConfig) -> JobReturn:
        assert self.hydra_context is not None and self.task_function is not None
        return run_job(
            hydra_context=self.hydra_context,
            task_function=self.task_function,
            config=cfg,
            job_dir_key="hydra.sweep.dir",
            job_subdir_key="hydra.sweep.subdir",
            configure_logging=False,
        )
