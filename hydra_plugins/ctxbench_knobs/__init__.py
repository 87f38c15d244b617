"""Every schema's defaults as a config node `/knobs/<group>/<name>` in Hydra's ConfigStore, which
the YAML options extend (bench/core/knobs.py; docs/design.md §4). Hydra imports each module under
`hydra_plugins` when it starts (as it does its launcher plugins' configs), so every process that
composes conf/ finds them: `python -m bench`, `bench.config.compose`, `analysis.settings`; launched
jobs get the ConfigStore with Hydra's singletons."""

import strategies
import tasks
from bench.config import ArmConfig, Limits, TrackingConfig
from bench.core import knobs
from bench.providers import scripted
from bench.providers.http.config import Transport
from bench.sandbox.base import SandboxConfig
from bench.sim import params as sim

strategies.store_knobs()
tasks.store_knobs()
knobs.store("model/transport", Transport)
sim.store()
scripted.store()
knobs.store("arm", ArmConfig)
knobs.store("tracking", TrackingConfig)
knobs.store("limits", Limits)
knobs.store("sandbox", SandboxConfig)
