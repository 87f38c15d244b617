"""Hydra's joblib launcher, each job run as Hydra's own `execute_job` runs it but for two
repeats that cost CPU and change nothing (docs/scaling.md §2, measured by `make bench`):

- `Singleton.set_state` rescans every installed Hydra plugin (`Plugins.instance()`: a walk of
  `hydra_plugins`, ~20 ms of CPU) and is called for every job. The state it installs is the
  launching process's, the same for every job of one `launch`, so a worker installs it once
  per launch (a token names the launch: a reused loky worker of a later sweep installs that
  sweep's state);
- `HydraConfig.set_config` is called here and again by `run_job` with the same config: once.

Everything else is Hydra's: the sweep config composed by the sweep's loader, `hydra.job.id`
and `num`, `run_job` with the job's output dir, callbacks and `.hydra/` files.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.types import HydraContext, TaskFunction
from hydra_plugins.hydra_joblib_launcher import _core
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
from joblib import Parallel, delayed
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)
LAUNCH = "ctxbench.launch"  # the key of the launch's token in the singleton state it ships
_INSTALLED: set[str] = set()  # launches whose singleton state this process has installed


def execute_job(idx: int, overrides: Sequence[str], hydra_context: HydraContext, config: DictConfig,
                task_function: TaskFunction, singleton_state: dict[Any, Any]) -> JobReturn:
    setup_globals()
    token = singleton_state.get(LAUNCH, "")
    if token not in _INSTALLED:
        Singleton.set_state(singleton_state)
        _INSTALLED.add(token)
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    return run_job(hydra_context=hydra_context, config=sweep_config, task_function=task_function,
                   job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")


class CtxbenchJoblibLauncher(JoblibLauncher):
    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        """Hydra's joblib `launch` (hydra_plugins.hydra_joblib_launcher._core), with this module's job."""
        assert self.config is not None and self.task_function is not None and self.hydra_context is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        joblib_cfg = self.joblib
        joblib_cfg["backend"] = "loky"  # as Hydra's: the threading backend is incompatible with Hydra
        _core.process_joblib_cfg(joblib_cfg)
        log.info("Joblib.Parallel(%s) is launching %d jobs", ",".join(f"{k}={v}" for k, v in joblib_cfg.items()),
                 len(job_overrides))
        log.info("Launching jobs, sweep output dir : %s", sweep_dir)
        for idx, overrides in enumerate(job_overrides):
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
        state = {**Singleton.get_state(), LAUNCH: uuid.uuid4().hex}
        runs = Parallel(**joblib_cfg)(
            delayed(execute_job)(initial_job_idx + idx, overrides, self.hydra_context, self.config,
                                 self.task_function, state)
            for idx, overrides in enumerate(job_overrides))
        assert isinstance(runs, list) and all(isinstance(r, JobReturn) for r in runs)
        return runs
