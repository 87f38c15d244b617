"""The real config, composed by Hydra the way a trial composes it, for tests to build on.

Model files extend one another (oracle.yaml extends sim.yaml; the real models extend
the transport schema's defaults, /knobs/model/transport), so a test never reads a group's YAML
file on its own.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from bench.config import CONF_DIR, TrialConfig, compose, load
from bench.sandbox.base import SandboxConfig

MODEL_CONF = CONF_DIR / "model"


@functools.cache
def _trial(overrides: tuple[str, ...]) -> TrialConfig:
    return load(compose(list(overrides)))


def trial_config(*overrides: str) -> TrialConfig:
    """The validated config of one trial (cached: composing costs ~0.1 s)."""
    return _trial(tuple(overrides))


def sandbox_config(name: str = "docker") -> SandboxConfig:
    """`sandbox=<name>` as the harness composes it (the schema's defaults under the YAML), validated."""
    return SandboxConfig.from_dict(trial_config(f"sandbox={name}").sandbox)


def model_config(name: str = "sim") -> dict[str, Any]:
    """`model=<name>` as a plain dict, a fresh copy the caller may mutate."""
    return copy.deepcopy(dict(trial_config(f"model={name}").model))
