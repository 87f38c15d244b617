"""An agent described by data (conf/agent/*.yaml), validated once into a frozen `AgentSpec`.

    agent=own              ctxbench's own loop with its `strategy` (the default; `agent` left out is the same)
    agent=mini_swe_agent   mini-swe-agent, its agent logic in its own venv, commands in the sandbox
    agent=claude_code      Claude Code's native binary in the sandbox, through the proxy's unix socket
    agent=codex            Codex CLI in the sandbox, through an in-sandbox forwarder to the socket

A user adds an agent with a YAML file of these keys (or a config of their own package through
`hydra.searchpath`, docs/plugins.md); a bad key is one line naming it and how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.config import ConfigError

OWN = "own"
REGISTRIES = ("pypi", "npm")
WIRE_APIS = ("anthropic", "openai_chat", "openai_responses")
RUNS = ("host", "sandbox")  # where the agent's own process runs (its commands always run in the sandbox)
KEYS = ("name", "version", "install", "runs", "wire_api", "dialect", "model_id", "model_ids", "commands", "env",
        "config_files", "compaction", "arms", "limits", "player", "context", "proxy_rewrite")
# Who builds what the model sees (docs/agents.md): `own`, the agent's own policy; `strategy`, the
# trial's `strategy` over the agent's message list, for an agent whose list is ours (mini's).
CONTEXTS = ("own", "strategy")
INSTALL_KEYS = ("registry", "package", "bin", "python")
ARM_KEYS = ("window", "env", "knobs")


@dataclass(frozen=True)
class Install:
    registry: str
    package: str
    bin: str  # the executable, relative to the install's folder
    python: str = ""  # pypi: the interpreter its venv is made with; empty: the one running ctxbench


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
    limits: Mapping[str, Any] = field(default_factory=dict)  # turn_timeout_s, output_limit_bytes
    player: str = ""  # "module:attribute" of the player class
    context: str = "own"  # own: the agent's policy; strategy: the trial's strategy over its list (CONTEXTS)
    proxy_rewrite: Any = None  # the proxy's Rewrite of the main thread (bench/proxy/rewrite.py); None: none

    @property
    def own(self) -> bool:
        return self.name == OWN

    def cache_dir(self, root: Path) -> Path:
        return root / f"{self.name}-{self.version}"

    def check_model_id(self, model_id: str) -> None:
        if self.model_ids and not any(re.fullmatch(p, model_id) for p in self.model_ids):
            raise ConfigError(f"agent.model_id={model_id!r} is not an id {self.name} accepts "
                              f"({', '.join(self.model_ids)}); set agent.model_id=... to one that matches")

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
        unknown = sorted(set(d) - set(KEYS))
        if unknown:
            raise ConfigError(f"agent.{unknown[0]}: unknown key; an agent has {', '.join(KEYS)} (conf/agent/)")
        name = d.get("name")
        if not name or not isinstance(name, str):
            raise ConfigError("agent.name is missing: choose agent=own|mini_swe_agent|claude_code|codex")
        if name == OWN:
            extra = sorted(k for k in d if k != "name")
            if extra:
                raise ConfigError(f"agent.{extra[0]}: agent=own is ctxbench's own loop and takes no other key")
            return cls(name=OWN)
        version = str(d.get("version") or "")
        if not re.fullmatch(r"\d+(\.\d+)+", version):
            raise ConfigError(f"agent.version={version!r}: pin {name} to an exact version, e.g. 2.4.6")
        raw = d.get("install") or {}
        bad = sorted(set(raw) - set(INSTALL_KEYS))
        if bad:
            raise ConfigError(f"agent.install.{bad[0]}: unknown key; install has {', '.join(INSTALL_KEYS)}")
        if raw.get("registry") not in REGISTRIES or not raw.get("package") or not raw.get("bin"):
            raise ConfigError(f"agent.install must name registry ({'|'.join(REGISTRIES)}), package and bin; "
                              f"got {dict(raw)}")
        install = Install(str(raw["registry"]), str(raw["package"]), str(raw["bin"]),
                          str(raw.get("python") or ""))
        runs, wire = str(d.get("runs") or "host"), str(d.get("wire_api") or "")
        if runs not in RUNS:
            raise ConfigError(f"agent.runs={runs!r} is not one of {', '.join(RUNS)}")
        if wire not in WIRE_APIS:
            raise ConfigError(f"agent.wire_api={wire!r} is not one of {', '.join(WIRE_APIS)}")
        commands = {str(k): tuple(str(a) for a in v) for k, v in dict(d.get("commands") or {}).items()}
        arms = {str(k): dict(v or {}) for k, v in dict(d.get("arms") or {}).items()}
        for arm, opts in arms.items():
            bad = sorted(set(opts) - set(ARM_KEYS))
            if bad:
                raise ConfigError(f"agent.arms.{arm}.{bad[0]}: unknown key; an arm's entry has {', '.join(ARM_KEYS)}")
            if opts.get("window", "absolute") not in ("absolute", "relative"):
                raise ConfigError(f"agent.arms.{arm}.window must be absolute or relative (to the agent's overhead)")
            knobs = dict(opts.get("knobs") or {})
            compaction = dict(d.get("compaction") or {})
            for knob, fraction in knobs.items():
                if knob not in compaction:
                    raise ConfigError(f"agent.arms.{arm}.knobs.{knob}: not one of {name}'s compaction knobs "
                                      f"({', '.join(compaction) or 'none'}); name it under agent.compaction first")
                if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction <= 1:
                    raise ConfigError(f"agent.arms.{arm}.knobs.{knob}={fraction!r}: give the fraction of the arm's "
                                      "window above the agent's overhead it is set to, in (0, 1]")
            if knobs:
                opts["knobs"] = {str(k): float(v) for k, v in knobs.items()}
        context = str(d.get("context") or "own")
        if context not in CONTEXTS:
            raise ConfigError(f"agent.context={context!r} is not one of {', '.join(CONTEXTS)} (own: {name}'s own "
                              "context policy; strategy: the trial's strategy=... over its message list)")
        from bench.proxy.rewrite import parse_rewrite

        rewrite = parse_rewrite(d.get("proxy_rewrite"))
        spec = cls(name=name, version=version, install=install, runs=runs, wire_api=wire,
                   dialect=str(d.get("dialect") or ""), model_id=str(d.get("model_id") or ""),
                   model_ids=tuple(str(p) for p in d.get("model_ids") or ()), commands=commands,
                   env={str(k): str(v) for k, v in dict(d.get("env") or {}).items()},
                   config_files={str(k): str(v) for k, v in dict(d.get("config_files") or {}).items()},
                   compaction={str(k): str(v) for k, v in dict(d.get("compaction") or {}).items()},
                   arms=arms, limits=dict(d.get("limits") or {}), player=str(d.get("player") or ""),
                   context=context, proxy_rewrite=rewrite)
        spec.check_model_id(spec.model_id)
        return spec
