"""Hydra's joblib launcher, each job run as Hydra's own `execute_job` runs it but for repeats
that cost CPU and change nothing (docs/scaling.md §2 and §9, measured by `make bench`):

- What every job of one `launch` shares (the Hydra context, the sweep's master config, the task
  function, the launching process's singleton state) is pickled once, in the launching process,
  and unpickled once per worker: Hydra's launcher pickles it with every job (~9 ms of CPU there,
  ~5 ms in the worker). `Singleton.set_state` rescans every installed Hydra plugin
  (`Plugins.instance()`: a walk of `hydra_plugins`, ~20 ms), so it too runs once per worker and
  launch (a token names the launch: a reused loky worker of a later sweep installs that sweep's).
- A job's return travels back without its two configs: the launching process reads only its
  status and return value (`BasicSweeper.sweep`), and every job's configs kept there grew its heap
  by ~8,600 objects a job, which the cyclic collector then walked again and again.
- The cyclic collector: OmegaConf's nodes point at their parents, so every config a job copies
  is a cycle only the collector frees. A worker's first job leaves it holding ~400k long-lived
  objects (imports, the composed bases, MLflow's and SQLAlchemy's state), and each full collection
  walked them all (~0.3 s, every few trials). After its first job a worker collects once and
  freezes what is alive (`gc.freeze`): later collections walk only what later jobs made. The
  launching process does the same before it dispatches.
- `HydraConfig.set_config` is left to `run_job`, which makes it with the same config (Hydra's
  `execute_job` makes it first as well).

Everything else is Hydra's: the sweep config composed by the sweep's loader, `hydra.job.id`
and `num`, `run_job` with the job's output dir, callbacks and `.hydra/` files.
"""

from __future__ import annotations

import gc
import logging
import uuid
from collections.abc import Sequence
from pathlib import Path

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.types import HydraContext, TaskFunction
from hydra_plugins.hydra_joblib_launcher import _core
from hydra_plugins.hydra_joblib_launcher.joblib_launcher import JoblibLauncher
from joblib import Parallel, delayed
from joblib.externals import (
    cloudpickle,  # what loky pickles a job with: the task function may live in __main__
)
from omegaconf import DictConfig, open_dict

log = logging.getLogger(__name__)
# This process's unpickled launches, by token: (Hydra context, master config, task function).
_LAUNCHES: dict[str, tuple[HydraContext, DictConfig, TaskFunction]] = {}
# Whether this process has frozen its heap. Not `gc.get_freeze_count()`: CPython counts the
# frozen objects by walking their list (~400k in a worker), ~25 ms asked after every job.
_SETTLED = [False]


def settle_heap() -> None:
    """Free what is garbage now, then keep everything alive out of later collections' walks."""
    gc.collect()
    gc.freeze()
    _SETTLED[0] = True


def execute_job(idx: int, overrides: Sequence[str], token: str, launch: bytes) -> JobReturn:
    setup_globals()
    if token not in _LAUNCHES:
        hydra_context, config, task_function, singleton_state = cloudpickle.loads(launch)
        Singleton.set_state(singleton_state)
        _LAUNCHES[token] = hydra_context, config, task_function
    hydra_context, config, task_function = _LAUNCHES[token]
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    ret = run_job(
        hydra_context=hydra_context,
        config=sweep_config,
        task_function=task_function,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )
    if not _SETTLED[0]:  # this process's first job: what it imported and cached stays
        settle_heap()
    return for_the_launcher(ret)


def for_the_launcher(ret: JobReturn) -> JobReturn:
    """The job's return as the launching process reads it: status and return value (or the
    exception), overrides and dirs; the job's configs stay with the worker."""
    return JobReturn(
        overrides=ret.overrides,
        working_dir=ret.working_dir,
        task_name=ret.task_name,
        status=ret.status,
        _return_value=ret._return_value,
    )


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
        log.info(
            "Joblib.Parallel(%s) is launching %d jobs",
            ",".join(f"{k}={v}" for k, v in joblib_cfg.items()),
            len(job_overrides),
        )
        log.info("Launching jobs, sweep output dir : %s", sweep_dir)
        for idx, overrides in enumerate(job_overrides):
            log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
        token = uuid.uuid4().hex
        launch = cloudpickle.dumps(
            (self.hydra_context, self.config, self.task_function, Singleton.get_state())
        )
        settle_heap()
        runs = Parallel(**joblib_cfg)(
            delayed(execute_job)(initial_job_idx + idx, overrides, token, launch)
            for idx, overrides in enumerate(job_overrides)
        )
        assert isinstance(runs, list) and all(isinstance(r, JobReturn) for r in runs)
        return runs
