"""Hydra composes, this module validates: the DictConfig becomes typed, frozen objects once,
at the entry point. Each component validates its own group (sandbox, strategy, model);
this module owns the keys that cross components."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from bench.sandbox.base import ANNEX_SWITCHES

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = ROOT / "conf"
ARMS = ("baseline", "compaction", "drift", "drift_compaction")
SAMPLES = ("unbiased", "selected")  # study.sample: how the study's task seeds were chosen

if not OmegaConf.has_resolver("ctxbench_root"):
    # Paths in the config are built from the project root, never from the working directory.
    OmegaConf.register_new_resolver("ctxbench_root", lambda: str(ROOT))


class ConfigError(ValueError):
    """A config value is wrong; the message names the key and how to fix it."""


def _require(d: Mapping, key: str, where: str) -> Any:
    if key not in d or d[key] is None:
        raise ConfigError(f"{where}.{key} is missing: set it in conf/{where}/ or on the command line "
                          f"({where}.{key}=...)")
    return d[key]


@dataclass(frozen=True)
class ArmConfig:
    name: str
    window: int | None
    drift: bool
    drift_kinds: tuple[str, ...] | None = None  # None: every kind the task schedules (an ablation narrows it)

    @classmethod
    def from_dict(cls, d: Mapping) -> ArmConfig:
        unknown = set(d) - {"name", "window", "drift", "drift_kinds"}
        if unknown:
            raise ConfigError(f"arm has unknown keys {sorted(unknown)}; allowed: name, window, drift, drift_kinds")
        name = _require(d, "name", "arm")
        if name not in ARMS:
            raise ConfigError(f"arm.name={name!r} is not one of {', '.join(ARMS)}")
        window = d.get("window")
        if window is not None and (not isinstance(window, int) or window < 2048):
            raise ConfigError(f"arm.window must be null or an integer >= 2048 tokens, got {window!r}")
        kinds = d.get("drift_kinds")
        if kinds is not None:
            from tasks.spec import DRIFT_KINDS

            kinds = tuple(kinds) if not isinstance(kinds, str) else (kinds,)
            bad = [k for k in kinds if k not in DRIFT_KINDS]
            if bad:
                raise ConfigError(f"arm.drift_kinds has unknown kind {bad[0]!r}; kinds: {', '.join(DRIFT_KINDS)}")
        return cls(name=name, window=window, drift=bool(d.get("drift", False)), drift_kinds=kinds)


@dataclass(frozen=True)
class TaskConfig:
    family: str
    seed: int
    size: tuple[tuple[str, Any], ...]

    @classmethod
    def from_dict(cls, d: Mapping) -> TaskConfig:
        seed = _require(d, "seed", "task")
        if not isinstance(seed, int) or seed < 0:
            raise ConfigError(f"task.seed must be a non-negative integer, got {seed!r}")
        # A knob set to null takes the family's default (which may depend on the seed).
        size = {k: v for k, v in dict(d.get("size") or {}).items() if v is not None}
        return cls(family=_require(d, "family", "task"), seed=seed, size=tuple(sorted(size.items())))


@dataclass(frozen=True)
class Limits:
    max_turns: int
    max_turns_per_step: int
    trial_timeout_s: float

    @classmethod
    def from_dict(cls, d: Mapping) -> Limits:
        out = cls(int(_require(d, "max_turns", "limits")), int(_require(d, "max_turns_per_step", "limits")),
                  float(_require(d, "trial_timeout_s", "limits")))
        if min(out.max_turns, out.max_turns_per_step) < 1 or out.trial_timeout_s <= 0:
            raise ConfigError(f"limits must be positive, got {out}")
        return out


@dataclass(frozen=True)
class TrackingConfig:
    uri: str
    experiment: str
    artifact_root: str
    tracing: bool
    blob_chars: int | None = None  # a longer string value is stored once, by reference (ctxlog/blobs.py)

    @classmethod
    def from_dict(cls, d: Mapping) -> TrackingConfig:
        uri = str(_require(d, "uri", "tracking"))
        if not uri.startswith(("sqlite:", "postgresql", "mysql", "http://", "https://", "databricks")):
            raise ConfigError(f"tracking.uri={uri!r}: this MLflow refuses the file store; use a database "
                              "URI such as sqlite:////abs/path/mlflow.db, or an http:// tracking server")
        blob_chars = d.get("blob_chars")
        if blob_chars is not None and (not isinstance(blob_chars, int) or isinstance(blob_chars, bool)
                                       or blob_chars < 1):
            raise ConfigError(f"tracking.blob_chars={blob_chars!r}: give a positive number of characters "
                              "(a longer value is stored once in blobs/), or null to keep every value in its record")
        return cls(uri=uri, experiment=str(_require(d, "experiment", "tracking")),
                   artifact_root=str(d.get("artifact_root") or ""), tracing=bool(d.get("tracing", False)),
                   blob_chars=blob_chars)


def study_sample(study: Mapping) -> dict[str, str]:
    """study.sample and study.sample_note, validated, as the MLflow tags the parent run and
    every trial carry (the report prints a banner on every page of a selected study)."""
    sample = str(study.get("sample") or "unbiased")
    note = " ".join(str(study.get("sample_note") or "").split())
    if sample not in SAMPLES:
        raise ConfigError(f"study.sample={sample!r} is not one of {', '.join(SAMPLES)}: unbiased if the task "
                          "seeds were fixed before looking at outcomes, selected if they were picked for what they show")
    if sample == "selected" and not note:
        raise ConfigError("study.sample=selected needs study.sample_note: say how the seeds were picked "
                          "(it heads every page of the report)")
    if len(note) > 500:
        raise ConfigError(f"study.sample_note has {len(note)} characters; keep it under 500")
    return {"study.sample": sample, "study.sample_note": note}


@dataclass(frozen=True)
class TrialConfig:
    """One trial, validated. Component groups stay mappings here and are validated by the
    component that owns them (strategies.make_strategy, providers.make_provider,
    sandbox.SandboxConfig) in `bench.trial.runner`."""

    strategy: Mapping[str, Any]
    arm: ArmConfig
    task: TaskConfig
    model: Mapping[str, Any]
    sandbox: Mapping[str, Any]
    tracking: TrackingConfig
    limits: Limits
    rep: int
    study: str
    results_dir: Path
    resolved: Mapping[str, Any]  # the whole resolved config, for params and artifacts
    config_hash: str
    resume: bool = True
    sample: Mapping[str, str] | None = None  # study_sample(): tags saying how the seeds were chosen
    agent: Mapping[str, Any] | None = None  # who plays (conf/agent/, bench/agents/spec.py); None: ctxbench's loop

    @property
    def level(self) -> str:
        """The trial's level beside the arms: its strategy for ctxbench's own loop, else the
        agent that manages its own context (docs/agents.md): the `strategy` tag and run name."""
        agent = (self.agent or {}).get("name")
        return str(agent) if agent and agent != "own" else str(self.strategy["name"])

    @property
    def run_name(self) -> str:
        return f"{self.level}·{self.arm.name}·{self.task.family}#{self.task.seed}·rep{self.rep}"


# Keys that do not change what a trial computes: where results go and how they are tracked.
_NON_SEMANTIC = ("tracking", "results_dir", "hydra", "study", "experiment", "resume")


def config_hash(resolved: Mapping[str, Any]) -> str:
    semantic = {k: v for k, v in resolved.items() if k not in _NON_SEMANTIC}
    if isinstance(semantic.get("agent"), Mapping) and semantic["agent"].get("name") == "own":
        del semantic["agent"]  # agent=own is what a trial is with `agent` left out (docs/agents.md)
    if isinstance(semantic.get("model"), Mapping):  # recording a cassette does not change the trial
        # nor does the rate limit: it changes when calls are sent, not what they answer
        semantic["model"] = {k: v for k, v in semantic["model"].items() if k not in ("record", "rate_limit")}
    if isinstance(semantic.get("sandbox"), Mapping):  # the sandbox's accelerations change no result
        semantic["sandbox"] = {k: v for k, v in semantic["sandbox"].items() if k not in ANNEX_SWITCHES}
    return hashlib.sha256(json.dumps(semantic, sort_keys=True, default=str).encode()).hexdigest()[:16]


def resolve(cfg: DictConfig | Mapping) -> dict[str, Any]:
    """The composed config as plain data, interpolations resolved, without Hydra's own node
    (whose job-time values, such as the sweep's subdir, exist only inside a Hydra job)."""
    if isinstance(cfg, DictConfig) and "hydra" in cfg:
        cfg = cfg.copy()
        with open_dict(cfg):
            del cfg["hydra"]
    container = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
    assert isinstance(container, dict)
    out: dict[str, Any] = {str(k): v for k, v in container.items()}
    out.pop("hydra", None)
    return out


def load(cfg: DictConfig | Mapping) -> TrialConfig:
    """Validate the composed config into a TrialConfig (the one conversion at the entry point)."""
    resolved = resolve(cfg)
    for group in ("strategy", "arm", "task", "model", "sandbox", "tracking", "limits"):
        if not isinstance(resolved.get(group), Mapping):
            raise ConfigError(f"config group {group!r} is missing; choose one, e.g. {group}=<option>")
    rep = resolved.get("rep", 0)
    if not isinstance(rep, int) or rep < 0:
        raise ConfigError(f"rep must be a non-negative integer, got {rep!r}")
    if "name" not in resolved["strategy"]:
        raise ConfigError("strategy.name is missing; choose strategy=raw|compaction|ledger|subagent")
    return TrialConfig(
        strategy=resolved["strategy"], arm=ArmConfig.from_dict(resolved["arm"]),
        task=TaskConfig.from_dict(resolved["task"]), model=resolved["model"], sandbox=resolved["sandbox"],
        tracking=TrackingConfig.from_dict(resolved["tracking"]), limits=Limits.from_dict(resolved["limits"]),
        rep=rep, study=str((resolved.get("study") or {}).get("name", "adhoc")),
        results_dir=Path(str(resolved.get("results_dir") or ROOT / "results")),
        resolved=resolved, config_hash=config_hash(resolved), resume=bool(resolved.get("resume", True)),
        sample=study_sample(resolved.get("study") or {}),
        agent=resolved.get("agent") if isinstance(resolved.get("agent"), Mapping) else None,
    )


def compose(overrides: list[str] | None = None, return_hydra_config: bool = False) -> DictConfig:
    """Compose the real config outside a Hydra app (tests, tools, bench.preflight)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=list(overrides or []),
                             return_hydra_config=return_hydra_config)
