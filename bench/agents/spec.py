"""An agent described by data (conf/agent/*.yaml), validated once into a frozen `AgentSpec`.

    agent=own              ctxbench's own loop with its `strategy` (the default; `agent` left out is the same)
    agent=mini_swe_agent   mini-swe-agent, its agent logic in its own venv, commands in the sandbox
    agent=claude_code      Claude Code's native binary in the sandbox, through the proxy's unix socket
    agent=codex            Codex CLI in the sandbox, through an in-sandbox forwarder to the socket

A user adds an agent with a YAML file of the keys `AgentKnobs` states, each with its type, default,
bounds and a one-line doc (or a config of their own package through `hydra.searchpath`,
docs/plugins.md); a bad key is one line naming it and how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field, StrictFloat, StrictStr, StringConstraints

from bench.config import ConfigError
from bench.core import knobs
from bench.core.knobs import Knobs

OWN = "own"
_Text = Annotated[StrictStr, StringConstraints(min_length=1)]


def _exact_version(value: Any) -> Any:
    value = str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
    if isinstance(value, str) and not re.fullmatch(r"\d+(\.\d+)+", value):
        raise ValueError("pin the agent to an exact version, e.g. 2.4.6")
    return value


class Install(Knobs):
    """`agent.install`: where scripts/ensure_agents.sh fetches the agent (at `agent.version`)."""

    registry: Literal["pypi", "npm"] = Field(description="the registry the package comes from")
    package: _Text = Field(description="the package's name in that registry")
    bin: _Text = Field(description="the executable, relative to the install's folder")
    python: StrictStr = Field(
        default="",
        description="pypi: the interpreter its venv is made with; empty = the one running ctxbench",
    )


class ArmEntry(Knobs):
    """`agent.arms.<arm>`: how one arm applies to this agent."""

    window: Literal["absolute", "relative"] = Field(
        default="absolute",
        description="relative: the arm's window counts above the agent's own fixed overhead",
    )
    env: dict[StrictStr, StrictStr] = Field(
        default_factory=dict, description="variables set for this arm only"
    )
    knobs: dict[StrictStr, Annotated[StrictFloat, Field(gt=0, le=1)]] = Field(
        default_factory=dict,
        description="the agent's own compaction knob -> the fraction of the arm's window "
        "above the agent's overhead it is set to (a player with sets_knobs)",
    )


class AgentLimits(Knobs):
    """`agent.limits`: an agent's turn, bounded; past one the agent fails (docs/design.md §9)."""

    # Ints, not floats: the defaults are what a composed config carries.
    turn_timeout_s: Annotated[StrictFloat, Field(gt=0)] = Field(
        default=300, description="one instruction's wall clock; past it the agent hangs (timeout)"
    )
    output_limit_bytes: Annotated[knobs.Integer, Field(ge=1)] = Field(
        default=1000000,
        description="what the agent may print per turn; past it the agent floods (its failure)",
    )


class AgentKnobs(Knobs):
    """`agent=<name>` (conf/agent/): a third-party agent described by data. Not registered as a node: a
    composed config carries the keys its YAML states (the config hash of agent trials stays), and a key
    left out gets its default here."""

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())  # `model_id` is a knob
    name: _Text = Field(description="the option's name: mini_swe_agent, claude_code, codex, ...")
    version: Annotated[StrictStr, BeforeValidator(_exact_version)] = Field(
        description="the exact version installed and run (scripts/ensure_agents.sh)"
    )
    install: Install = Field(description="where it is installed from")
    runs: Literal["host", "sandbox"] = Field(
        default="host",
        description="where the agent's own process runs (its commands always run in the sandbox)",
    )
    wire_api: Literal["anthropic", "openai_chat", "openai_responses"] = Field(
        description="the API it speaks to the proxy"
    )
    dialect: StrictStr = Field(
        default="", description="the sim's dialect module for its tools (bench/sim/dialects/)"
    )
    model_id: StrictStr = Field(default="", description="the id it is told to use; the proxy answers any")
    model_ids: tuple[StrictStr, ...] = Field(
        default=(), description="patterns of ids it accepts; empty = any"
    )
    commands: dict[StrictStr, tuple[StrictStr, ...]] = Field(
        default_factory=dict,
        description="first, next: argv templates of a step's first and later instructions",
    )
    env: dict[StrictStr, StrictStr] = Field(default_factory=dict, description="variables set for its process")
    config_files: dict[StrictStr, StrictStr] = Field(
        default_factory=dict, description="path under the agent's home -> text written there before it starts"
    )
    compaction: dict[StrictStr, StrictStr] = Field(
        default_factory=dict,
        description="the agent's own compaction knobs -> what each does (docs/agents.md)",
    )
    arms: dict[StrictStr, ArmEntry] = Field(
        default_factory=dict, description="arm name -> how that arm applies"
    )
    limits: AgentLimits = Field(default=AgentLimits(), description="its turn's bounds")
    player: StrictStr = Field(default="", description="module:attribute of its player class")
    context: Literal["own", "strategy"] = Field(
        default="own",
        description="own: the agent's context policy; strategy: the trial's strategy over its "
        "message list (mini's)",
    )
    proxy_rewrite: dict[StrictStr, Any] | None = Field(
        default=None,
        description="the proxy's rewrite of the main thread (bench/proxy/rewrite.py); null = none",
    )


@dataclass(frozen=True)
class AgentSpec:
    name: str
    version: str = ""
    install: Install | None = None
    runs: str = "host"
    wire_api: str = "openai_chat"
    dialect: str = ""  # the sim's dialect module for this agent's tools (bench/sim/dialects/)
    model_id: str = ""  # the id the agent is told to use; the proxy answers it whatever it is
    model_ids: tuple[str, ...] = ()  # patterns of ids the agent accepts (empty: any)
    commands: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # first, next: argv templates
    env: Mapping[str, str] = field(default_factory=dict)
    config_files: Mapping[str, str] = field(default_factory=dict)  # path under the agent's home -> text
    compaction: Mapping[str, str] = field(default_factory=dict)  # the agent's own knob -> what it does
    arms: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # arm -> window mode, env, knobs
    limits: AgentLimits = AgentLimits()
    player: str = ""  # "module:attribute" of the player class
    context: str = (
        "own"  # own: the agent's policy; strategy: the trial's strategy over its list (AgentKnobs.context)
    )
    proxy_rewrite: Any = None  # the proxy's Rewrite of the main thread (bench/proxy/rewrite.py); None: none

    @property
    def own(self) -> bool:
        return self.name == OWN

    def cache_dir(self, root: Path) -> Path:
        return root / f"{self.name}-{self.version}"

    def check_model_id(self, model_id: str) -> None:
        if self.model_ids and not any(re.fullmatch(p, model_id) for p in self.model_ids):
            raise ConfigError(
                f"agent.model_id={model_id!r} is not an id {self.name} accepts "
                f"({', '.join(self.model_ids)}); set agent.model_id=... to one that matches"
            )

    def arm(self, arm: str) -> Mapping[str, Any]:
        return self.arms.get(arm) or {}

    def knobs(self, arm: str, window: int, overhead: int) -> dict[str, int]:
        """The agent's own compaction knobs under an arm: each its overhead plus its fraction of the
        arm's window (conf/agent/*.yaml `arms.<arm>.knobs`), so that it compacts, by its own count,
        before the proxy refuses, and its compaction request still fits. Empty without a window."""
        if not window:
            return {}
        return {k: overhead + int(f * window) for k, f in dict(self.arm(arm).get("knobs") or {}).items()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> AgentSpec:
        if d is None:
            return cls(name=OWN)
        name = d.get("name")
        if not name or not isinstance(name, str):
            raise ConfigError("agent.name is missing: choose agent=own|mini_swe_agent|claude_code|codex")
        if name == OWN:
            extra = sorted(k for k in d if k != "name")
            if extra:
                raise ConfigError(
                    f"agent.{extra[0]}: agent=own is ctxbench's own loop and takes no other key"
                )
            return cls(name=OWN)
        try:
            given = knobs.validate(AgentKnobs, d, "agent", f"conf/agent/{name}.yaml or the command line")
        except knobs.ConfigError as exc:
            raise ConfigError(str(exc)) from None
        for arm, entry in given.arms.items():
            unknown = sorted(set(entry.knobs) - set(given.compaction))
            if unknown:
                raise ConfigError(
                    f"agent.arms.{arm}.knobs.{unknown[0]}: not one of {name}'s compaction knobs "
                    f"({', '.join(given.compaction) or 'none'}); name it under agent.compaction first"
                )
        from bench.proxy.rewrite import parse_rewrite

        spec = cls(
            name=name,
            version=given.version,
            install=given.install,
            runs=given.runs,
            wire_api=given.wire_api,
            dialect=given.dialect,
            model_id=given.model_id,
            model_ids=given.model_ids,
            commands=given.commands,
            env=given.env,
            config_files=given.config_files,
            compaction=given.compaction,
            arms={arm: entry.model_dump() for arm, entry in given.arms.items()},
            limits=given.limits,
            player=given.player,
            context=given.context,
            proxy_rewrite=parse_rewrite(d.get("proxy_rewrite")),
        )
        spec.check_model_id(spec.model_id)
        return spec
