"""The player of a trial from its `agent` config (docs/agents.md): None for ctxbench's own loop.

The trial reaches this module only by name, through `bench.trial.player.PLAYERS` (a registry
entry, so bench/trial never imports the agents, which import it): `validate` in runner.prepare
(so preflight says one line), `make` in runner.start.
"""

from __future__ import annotations

from typing import Any

from bench.agents.spec import AgentSpec
from bench.config import ConfigError, TrialConfig
from bench.core.registry import Registry
from bench.providers.base import Provider

SPEAKS_CTXBENCH = ("sim", "scripted")  # models that call ctxbench's own tools: the sim, the attack suite's


def model_provider(spec: AgentSpec, model_cfg: Any, provider: Provider) -> Provider:
    """What the proxy forwards to: a model that speaks ctxbench's tools (the sim, a scripted
    attack of bench/providers/attacks/) speaks the agent's tool dialect (bench/sim/dialects/), so
    whatever it tells ctxbench's loop to do it tells the agent; any other model is the agent's
    model as it is.

    A recorded sim (`model.record=PATH`) is recorded outside its dialect: the cassette holds the
    requests the proxy forwarded and the replies the agent got, in the agent's own tools, so
    `model.provider=replay` plays the agent trial back with no sim and no dialect (docs/agents.md)."""
    if model_cfg.get("provider") not in SPEAKS_CTXBENCH or not spec.dialect:
        return provider
    from bench.providers.replay import RecordingProvider
    from bench.sim.dialects import DIALECTS, DialectProvider

    dialect = DIALECTS.load(spec.dialect)
    if isinstance(provider, RecordingProvider):
        return RecordingProvider(DialectProvider(provider.inner, dialect), provider.path)
    return DialectProvider(provider, dialect)


def validate(tcfg: TrialConfig) -> AgentSpec:
    """Bad input before anything exists (bench/preflight.py builds the parts through runner.prepare):
    an agent with no player, not installed or at another version is one line, never a trial's error."""
    spec = AgentSpec.from_dict(tcfg.agent)
    if spec.own:
        return spec
    if not spec.player:
        raise ConfigError(
            f"agent={spec.name} has no player yet (agent.player is empty); docs/agents.md says which "
            "agents play today"
        )
    from bench.agents.install import installed

    installed(spec)
    cls = _player_class(spec)  # a misspelt agent.player is bad input too, not a crash when the trial starts
    if spec.context == "strategy" and not getattr(cls, "applies_strategy", False):
        raise ConfigError(
            f"agent.context=strategy: {spec.name}'s message list lives in its own process, not ours; "
            "use the proxy's rewrites instead (agent.proxy_rewrite.name=masking|trim, docs/agents.md)"
        )
    if spec.arm(tcfg.arm.name).get("knobs") and not getattr(cls, "sets_knobs", False):
        raise ConfigError(
            f"agent.arms.{tcfg.arm.name}.knobs: {spec.name}'s player cannot set its compaction knobs "
            "(its player has no sets_knobs); state the knob as the arm's env instead"
        )
    return spec


def _player_class(spec: AgentSpec) -> Any:
    return Registry("agent.player", {}, hint="name a class as 'package.module:Class' (conf/agent/)").load(
        spec.player
    )


def make_player(tcfg: TrialConfig, parts: Any, seed: int) -> Any | None:
    spec = validate(tcfg)
    if spec.own:
        return None
    cls = _player_class(spec)
    relative = spec.arm(tcfg.arm.name).get("window") == "relative"
    strategy = {"strategy": parts.strategy} if spec.context == "strategy" else {}  # mini_context.py
    # the agent's own compaction knobs
    knobs = {"arm": tcfg.arm.name} if getattr(cls, "sets_knobs", False) else {}
    return cls(
        spec,
        model_provider(spec, tcfg.model, parts.provider),
        seed=seed,
        window=parts.window,
        relative=relative,
        max_output=parts.max_output,
        exec_timeout_s=parts.sandbox.exec_timeout_s,
        **strategy,
        **knobs,
    )


class ExternalAgents:
    """What `bench.trial.player.PLAYERS["external"]` loads."""

    validate = staticmethod(validate)
    make = staticmethod(make_player)


EXTERNAL = ExternalAgents()
