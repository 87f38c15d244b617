"""Hydra's basic sweeper (same sweep syntax, same jobs, same order), with each job's config
composed by bench.accel.compose.SweepLoader: in `validate_batch_is_legal` here, and in the
launcher's workers, which receive the wrapped loader in the Hydra context."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_loader import ConfigLoader
from hydra.types import HydraContext


class CtxbenchSweeper(BasicSweeper):
    def setup(self, *, hydra_context: HydraContext, task_function: Any, config: Any) -> None:
        # Here, not at the top: Hydra imports every plugin when it starts, a single run too,
        # and a single run is the reference path, which imports no annex (bench/accel/).
        from bench.accel.compose import fast

        # the loader's interface, by delegation
        loader = cast(ConfigLoader, fast(hydra_context.config_loader))
        hydra_context = HydraContext(config_loader=loader, callbacks=hydra_context.callbacks)
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def validate_batch_is_legal(self, batch: Any) -> None:
        assert self.hydra_context is not None and self.config is not None
        from bench.accel.compose import SweepLoader

        loader = self.hydra_context.config_loader
        assert isinstance(loader, SweepLoader)
        loader.validate(self.config, batch)
        # The workers read these bases instead of composing them again (bench/accel/compose.py).
        loader.share(Path(str(self.config.hydra.sweep.dir)) / ".composed_bases.pkl")
