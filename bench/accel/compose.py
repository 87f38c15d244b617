"""Composing each job of a big sweep without composing it from scratch (docs/scaling.md §9).

Hydra composes every job's config twice: once in the launching process, to validate the
sweep before any job runs, and once in the worker that runs it; each composition reads and
merges every YAML file again (~0.2 s of CPU here). For the 4,800-job grid that is ~16 minutes
before the first trial starts and ~0.2 s of CPU per trial. Yet the grid's jobs differ only in
a few group choices (strategy, arm, task: 48 combinations) and in plain values (`task.seed`,
`rep`).

`SweepLoader` wraps Hydra's config loader: a job's config is composed once per distinct set of
group (and `hydra.*`) overrides in a process, then copied, with the job's value overrides
applied by Hydra's own function and the job's own override lists and `override_dirname` set
as Hydra sets them. tests/bench/accel/test_compose.py checks the result against Hydra's own
composition, job by job. The ctxbench sweeper (hydra_plugins/ctxbench_sweeper) hands it to the
launcher, so joblib, Ray and SLURM workers use it too.

The launching process composes every base anyway (the plan, then the sweep's validation, share
one cache), so it writes them to the sweep dir (`share`) and a worker reads that file instead
of composing them again: 48 bases at ~0.3 s each, per worker. A worker that cannot read it (a
node without the sweep dir) composes as before.

Each base is also kept pickled, and a job's copy is unpickled from it: 1.1 ms of CPU against 6.5
for `copy.deepcopy` of the same DictConfig (OmegaConf copies node by node in Python either way,
but unpickling skips the memo and the per-node `__deepcopy__` dispatch; docs/scaling.md §9).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

# One process's composed bases, keyed by (config name, the master's hydra overrides, the job's
# group and hydra overrides). Module state, not the loader's, so it never travels in a pickle.
_BASES: dict[tuple[Any, ...], DictConfig] = {}
_PICKLED: dict[tuple[Any, ...], bytes] = {}  # each base pickled once, for its jobs' copies
_PARSED: dict[str, Any] = {}
_READ: set[str] = set()  # shared files this process has read


def composed(inner: Any, master_config: DictConfig, structural: Sequence[str]) -> DictConfig:
    """Hydra's composition of the job whose group and hydra overrides are `structural`, once per
    process (callers copy it before changing it)."""
    key = (master_config.hydra.job.config_name, tuple(master_config.hydra.overrides.hydra), tuple(structural))
    if key not in _BASES:
        _BASES[key] = inner.load_sweep_config(master_config, list(structural))
    return _BASES[key]


class SweepLoader:
    """Hydra's config loader with a fast `load_sweep_config`; everything else is the loader's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.shared: str | None = None  # where the launching process left its composed bases

    def share(self, path: Path) -> None:
        """Write every base this process has composed to `path` for the workers (atomically: a
        worker reads all of it or nothing)."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            pickle.dump(dict(_BASES), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        self.shared = str(path)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # while unpickling, before __init__'s attribute exists
            raise AttributeError(name)
        return getattr(self.inner, name)

    def load_sweep_config(self, master_config: DictConfig, sweep_overrides: Sequence[str]) -> DictConfig:
        from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname

        parsed, key, values = self._split(master_config, sweep_overrides)
        cfg = self._copy(master_config, key)
        ConfigLoaderImpl._apply_overrides_to_config(values, cfg)  # what Hydra does after composing
        app = [o for o in parsed if not o.is_hydra_override()]
        with open_dict(cfg.hydra):
            cfg.hydra.overrides.task = [o.input_line for o in app]
            sep = cfg.hydra.job.config.override_dirname
            cfg.hydra.job.override_dirname = get_overrides_dirname(
                overrides=app, kv_sep=sep.kv_sep, item_sep=sep.item_sep, exclude_keys=sep.exclude_keys
            )
        OmegaConf.copy_cache(from_config=master_config, to_config=cfg)
        return cfg

    def validate(self, master_config: DictConfig, batch: Sequence[Sequence[str]]) -> None:
        """Raise what composing some job of `batch` would raise: each distinct group choice is
        composed once and each distinct value override applied to a copy of it once (a value
        override sets one key whatever else the job sets)."""
        from hydra._internal.config_loader_impl import ConfigLoaderImpl

        values_by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
        for job in batch:
            _, key, values = self._split(master_config, job)
            values_by_key.setdefault(key, {}).update({o.input_line: o for o in values})
        for key, distinct in values_by_key.items():
            cfg = self._copy(master_config, key)
            for override in distinct.values():
                ConfigLoaderImpl._apply_overrides_to_config([override], cfg)

    def _split(
        self, master_config: DictConfig, overrides: Sequence[str]
    ) -> tuple[list[Any], tuple[Any, ...], list[Any]]:
        """(parsed overrides, the key of their composed base, the value overrides)."""
        from hydra.core.override_parser.overrides_parser import OverridesParser

        parser = None
        for s in overrides:
            if s not in _PARSED:
                parser = parser or OverridesParser.create()
                _PARSED[s] = parser.parse_override(s)
        parsed = [_PARSED[s] for s in overrides]
        structural = tuple(o.input_line for o in parsed if o.is_hydra_override() or self._is_group(o))
        values = [o for o in parsed if not (o.is_hydra_override() or self._is_group(o))]
        return (
            parsed,
            (master_config.hydra.job.config_name, tuple(master_config.hydra.overrides.hydra), structural),
            values,
        )

    def _base(self, master_config: DictConfig, key: tuple[Any, ...]) -> DictConfig:
        shared = getattr(self, "shared", None)
        if key not in _BASES and shared and shared not in _READ:
            _READ.add(shared)
            try:
                with open(shared, "rb") as f:
                    for k, cfg in pickle.load(f).items():
                        _BASES.setdefault(k, cfg)
            except (OSError, EOFError, pickle.UnpicklingError):
                pass  # not on this node, or unreadable: compose here
        return composed(self.inner, master_config, key[2])

    def _copy(self, master_config: DictConfig, key: tuple[Any, ...]) -> DictConfig:
        """A job's own copy of its base, unpickled (the base object itself is never handed out)."""
        if key not in _PICKLED:
            _PICKLED[key] = pickle.dumps(self._base(master_config, key), protocol=pickle.HIGHEST_PROTOCOL)
        cfg = pickle.loads(_PICKLED[key])
        assert isinstance(cfg, DictConfig)
        return cfg

    def _is_group(self, o: Any) -> bool:
        """Hydra's own rule for an override that picks a config group option (defaults_list.py)."""
        return bool(self.inner.repository.group_exists(o.key_or_group) and not isinstance(o.value(), dict))


def fast(loader: Any) -> SweepLoader:
    return loader if isinstance(loader, SweepLoader) else SweepLoader(loader)
