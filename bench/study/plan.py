"""A study's plan: every trial its sweep launches, with the config hash the trial will carry,
so that the report can count each planned trial as finished, excluded or missing
(docs/studies.md).

Hashing a job means composing its config the way the launcher will. Hydra composes each job
from scratch (0.1–0.4 s here); the grid's 480 jobs differ in a few group choices (48
combinations) and in plain values (`task.seed`, `rep`). So each distinct set of group
overrides is composed once, and the value overrides are applied to a copy with Hydra's own
function for them (the step that follows composition in Hydra too): the same config, the
grid's plan in seconds instead of minutes. tests/bench/study/test_plan.py checks the result
against a full compose per job and against the hashes the trials themselves record.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, open_dict, read_write

from bench.core.identity import model_identity

# Keys that never make a different study of a plain multirun (a rerun with resume=false is
# still the same study).
_NAME_IGNORES = ("resume",)


@contextlib.contextmanager
def _config_loader() -> Iterator[Any]:
    """Hydra's config loader: the running app's (the multirun), or one over conf/ (tests, tools)."""
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        yield GlobalHydra.instance().config_loader()
        return
    from hydra import initialize_config_dir

    from bench.config import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        yield GlobalHydra.instance().config_loader()


@contextlib.contextmanager
def sweep_config(overrides: list[str]) -> Iterator[DictConfig]:
    """What `python -m bench -m OVERRIDES` composes before the multirun starts (tests, `make bench`)."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    from bench.config import CONF_DIR

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        hydra = GlobalHydra.instance().hydra
        assert hydra is not None
        yield hydra.compose_config("config", overrides, run_mode=RunMode.MULTIRUN)


def derived_name(jobs: Sequence[Sequence[str]]) -> str:
    """`adhoc-<8 hex>` named after the set of trials a multirun plans, whatever their order
    or spelling on the command line (`task.seed=0,1` and `task.seed=range(0,2)` agree)."""
    keyed = sorted(
        json.dumps(sorted(o for o in job if o.split("=", 1)[0].lstrip("+~") not in _NAME_IGNORES))
        for job in jobs
    )
    return "adhoc-" + hashlib.sha256("\n".join(keyed).encode()).hexdigest()[:8]


def plan_trials(master: DictConfig, jobs: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """One entry per job: its overrides and either its config hash and identity, or the error
    that will stop it (a bad value: the job would crash, so it is planned but never runs)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import OverrideType

    from bench.accel import compose
    from bench.config import load

    parser = OverridesParser.create()
    parsed: dict[str, Any] = {}
    composed: dict[tuple[str, ...], DictConfig | Exception] = {}
    reused: dict[tuple[Any, ...], DictConfig] = {}
    out: list[dict[str, Any]] = []
    with _config_loader() as loader:
        repo = loader.repository

        def is_group(o: Any) -> bool:  # Hydra's own rule (hydra/_internal/defaults_list.py, Overrides)
            return o.key_or_group.startswith("hydra") or (
                repo.group_exists(o.key_or_group) and not isinstance(o.value(), dict)
            )

        for num, job in enumerate(jobs):
            entry: dict[str, Any] = {"job": num, "overrides": list(job)}
            try:
                for s in job:  # the grid's 2880 overrides are 23 distinct strings
                    if s not in parsed:
                        parsed[s] = parser.parse_override(s)
                overrides = [parsed[s] for s in job]
                groups = tuple(o.input_line for o in overrides if is_group(o))
                if groups not in composed:
                    try:
                        # Copied from the process's cache, which the sweep's validation and its
                        # workers share (compose.py).
                        composed[groups] = _task_config(
                            copy.deepcopy(compose.composed(loader, master, groups))
                        )
                    except Exception as exc:  # every job of this group choice fails the same way
                        composed[groups] = exc
                base = composed[groups]
                if isinstance(base, Exception):
                    raise base
                values = [o for o in overrides if not is_group(o)]
                # Jobs that set the same keys to new values can share one copy of their base: each
                # job's overrides replace the last job's (the grid: 100 seeds, one deepcopy).
                same_keys = (groups, tuple(o.key_or_group for o in values))
                if not all(o.type == OverrideType.CHANGE for o in values):
                    cfg = copy.deepcopy(base)
                elif same_keys not in reused:
                    cfg = reused[same_keys] = copy.deepcopy(base)
                else:
                    cfg = reused[same_keys]
                ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
                tcfg = load(cfg)
                entry.update(
                    config_hash=tcfg.config_hash,
                    strategy=tcfg.level,  # an agent is a level (docs/agents.md)
                    arm=tcfg.arm.name,
                    task_family=tcfg.task.family,
                    task_seed=tcfg.task.seed,
                    rep=tcfg.rep,
                    model=model_identity(tcfg.model),
                    sensitivity_point=_point(tcfg.resolved),
                )
            except Exception as exc:
                entry.update(config_hash=None, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            out.append(entry)
    return out


def _point(resolved: Mapping[str, Any]) -> str:
    """The trial's sensitivity point (conf/sensitivity/) or ablation switch (conf/ablation/,
    "ablation=<name>"), "" elsewhere: trials at two points share every identity tag but are
    different trials (analysis/load/runs.py POINT)."""
    node = resolved.get("sensitivity")
    if isinstance(node, Mapping) and node.get("point"):
        return str(node["point"])
    return f"ablation={resolved['ablation']}" if resolved.get("ablation") else ""


def _task_config(cfg: DictConfig) -> DictConfig:
    # What the task function receives: the job's config without its hydra node (run_job).
    with read_write(cfg), open_dict(cfg):
        del cfg["hydra"]
    return cfg
