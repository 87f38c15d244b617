"""Hydra composes, this module validates: the DictConfig becomes typed, frozen objects once,
at the entry point. Each component validates its own group (sandbox, strategy, model);
this module owns the keys that cross components."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from omegaconf import DictConfig, OmegaConf, open_dict
from pydantic import AfterValidator, BeforeValidator, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from bench.core import knobs
from bench.core.knobs import ConfigError, Knobs
from bench.sandbox.base import ANNEX_SWITCHES

ROOT = Path(__file__).resolve().parent.parent
CONF_DIR = ROOT / "conf"
# the arms are the options in conf/arm/
ARMS = tuple(sorted(p.stem for p in (CONF_DIR / "arm").glob("*.yaml")))
SAMPLES = ("unbiased", "selected")  # study.sample: how the study's task seeds were chosen

if not OmegaConf.has_resolver("ctxbench_root"):
    # Paths in the config are built from the project root, never from the working directory.
    OmegaConf.register_new_resolver("ctxbench_root", lambda: str(ROOT))


def _arm_name(name: str) -> str:
    if name not in ARMS:
        raise ValueError(f"must be one of {', '.join(ARMS)} (the options in conf/arm/)")
    return name


def _drift_kinds(kinds: tuple[str, ...]) -> tuple[str, ...]:
    from tasks.spec import DRIFT_KINDS

    bad = [k for k in kinds if k not in DRIFT_KINDS]
    if bad:
        raise ValueError(f"unknown kind {bad[0]!r}; kinds: {', '.join(DRIFT_KINDS)}")
    return kinds


class ArmConfig(Knobs):
    """conf/arm/<name>.yaml: the environment a trial runs in, not the strategy."""

    name: Annotated[StrictStr, AfterValidator(_arm_name)] = Field(description="the arm: one of conf/arm/")
    window: Annotated[StrictInt, Field(ge=2048)] | None = Field(
        default=None, description="tokens the strategy may fill; null = the model's window"
    )
    drift: StrictBool = Field(
        default=False, description="apply the task's drift schedule (outside commits mid-task)"
    )
    drift_kinds: (
        Annotated[
            tuple[StrictStr, ...],
            BeforeValidator(lambda v: (v,) if isinstance(v, str) else v),
            AfterValidator(_drift_kinds),
        ]
        | None
    ) = Field(
        default=None,
        description="null = every kind of drift the task schedules; a list keeps only those (ablations)",
    )


class TaskConfig(Knobs):
    """conf/task/<family>.yaml: which task a trial faces. Its size knobs are the family's own
    schema's (`Size` beside its generate, tasks/common/size.py), which generate checks too."""

    family: StrictStr = Field(description="the task family: one of tasks.FAMILIES (conf/task/)")
    seed: Annotated[StrictInt, Field(ge=0)] = Field(
        description="the task's seed: same seed and size, same task"
    )
    size: tuple[tuple[str, Any], ...] = Field(
        default=(), description="the size knobs set, sorted; one left out or null takes the family's default"
    )
    kept: StrictBool = Field(
        default=False,
        description="an acceleration (TASK_ANNEX_SWITCHES): tasks kept per process (bench/accel/kept_tasks.py)",
    )

    @classmethod
    def from_dict(cls, d: Mapping) -> TaskConfig:
        import tasks

        source = f"conf/task/{d['family']}.yaml" if d.get("family") else "conf/task/"
        source += " or the command line"
        head = knobs.validate(cls, {k: v for k, v in d.items() if k != "size"}, "task", source)
        # A null knob takes the family's default, which may depend on the seed (callers).
        given = {k: v for k, v in dict(d.get("size") or {}).items() if v is not None}
        schema = tasks.size_schema(head.family)  # None: a plug-in family's generate checks its own
        if schema is not None:
            given = knobs.validate(schema, given, "task.size", source).model_dump(exclude_unset=True)
        return head.model_copy(update={"size": tuple(sorted(given.items()))})


class Limits(Knobs):
    """`limits`: a trial's budgets; past one it ends with the failure named."""

    # Ints, not floats: the defaults are what the composed config (and so the config hash) carries.
    max_turns: Annotated[StrictInt, Field(ge=1)] = Field(
        default=240, description="turns per trial; past it the trial fails with turn_budget"
    )
    max_turns_per_step: Annotated[StrictInt, Field(ge=1)] = Field(
        default=16, description="turns per step; past it the step fails"
    )
    trial_timeout_s: Annotated[StrictFloat, Field(gt=0)] = Field(
        default=900,
        description="wall clock per trial, not counting time queued for the study's rate limit "
        "(bench/core/queued.py); past it: timeout",
    )


def _tracking_uri(uri: str) -> str:
    if not uri.startswith(("sqlite:", "postgresql", "mysql", "http://", "https://", "databricks")):
        raise ValueError(
            "this MLflow refuses the file store; use a database URI such as "
            "sqlite:////abs/path/mlflow.db, or an http:// tracking server"
        )
    return uri


class TrackingConfig(Knobs):
    """conf/tracking/<name>.yaml: where trials are tracked (MLflow)."""

    uri: Annotated[StrictStr, AfterValidator(_tracking_uri)] = Field(
        description="the MLflow tracking URI (a database or a tracking server)"
    )
    experiment: StrictStr = Field(description="the MLflow experiment trials are logged under")
    artifact_root: StrictStr = Field(
        default="", description="where a newly created experiment stores artifacts; empty = MLflow's default"
    )
    tracing: StrictBool = Field(
        default=False, description="one MLflow trace per trial: a span per model call and tool call"
    )
    # 256 KiB: above every value of ordinary trials (sim and scripted at most 24 KB, real agents'
    # request bodies at most ~311 KB in 2,389 logs measured, 5 of 90 bodies above it), a quarter of
    # one tool call's argument bound (1 MiB), so what floods a log is stored once.
    # 0, not null, for never: a null knob takes its default (bench/core/knobs.py).
    blob_chars: Annotated[StrictInt, Field(ge=0)] = Field(
        default=262144,
        description="a string value of the event log longer than this is stored once in "
        "blobs/<sha256> beside events.jsonl (docs/design.md §6); 0: never",
    )


def study_sample(study: Mapping) -> dict[str, str]:
    """study.sample and study.sample_note, validated, as the MLflow tags the parent run and
    every trial carry (the report prints a banner on every page of a selected study)."""
    sample = str(study.get("sample") or "unbiased")
    note = " ".join(str(study.get("sample_note") or "").split())
    if sample not in SAMPLES:
        raise ConfigError(
            f"study.sample={sample!r} is not one of {', '.join(SAMPLES)}: unbiased if the task "
            "seeds were fixed before looking at outcomes, selected if they were picked for what they show"
        )
    if sample == "selected" and not note:
        raise ConfigError(
            "study.sample=selected needs study.sample_note: say how the seeds were picked "
            "(it heads every page of the report)"
        )
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
    agent: Mapping[str, Any] | None = (
        None  # who plays (conf/agent/, bench/agents/spec.py); None: ctxbench's loop
    )

    @property
    def level(self) -> str:
        """The trial's level beside the arms: its strategy for ctxbench's own loop, else the
        agent that manages its own context (docs/agents.md): the `strategy` tag and run name."""
        agent = (self.agent or {}).get("name")
        if not agent or agent == "own":
            return str(self.strategy["name"])
        if (self.agent or {}).get("context") == "strategy":  # ctxbench's strategy over its list: mini+masking
            return f"{agent}+{self.strategy['name']}"
        rewrite = ((self.agent or {}).get("proxy_rewrite") or {}).get("name")
        return f"{agent}+proxy_{rewrite}" if rewrite and rewrite != "none" else str(agent)

    @property
    def run_name(self) -> str:
        return f"{self.level}·{self.arm.name}·{self.task.family}#{self.task.seed}·rep{self.rep}"


# Keys that do not change what a trial computes: where results go and how they are tracked.
_NON_SEMANTIC = ("tracking", "results_dir", "hydra", "study", "experiment", "resume")
# The task's acceleration (bench/accel/kept_tasks.py): how often a task is generated, never what it is.
TASK_ANNEX_SWITCHES = ("kept",)


def config_hash(resolved: Mapping[str, Any]) -> str:
    semantic = {k: v for k, v in resolved.items() if k not in _NON_SEMANTIC}
    if isinstance(semantic.get("agent"), Mapping) and semantic["agent"].get("name") == "own":
        del semantic["agent"]  # agent=own is what a trial is with `agent` left out (docs/agents.md)
    elif isinstance(semantic.get("agent"), Mapping):  # the agent's own context policy is the trial as it was
        semantic["agent"] = {
            k: v
            for k, v in semantic["agent"].items()
            if not (k == "context" and v == "own")
            and not (k == "proxy_rewrite" and isinstance(v, Mapping) and v.get("name", "none") == "none")
        }
    if isinstance(semantic.get("model"), Mapping):  # recording a cassette does not change the trial
        # nor does the rate limit: it changes when calls are sent, not what they answer
        semantic["model"] = {k: v for k, v in semantic["model"].items() if k not in ("record", "rate_limit")}
    if isinstance(semantic.get("sandbox"), Mapping):  # the sandbox's accelerations change no result
        semantic["sandbox"] = {k: v for k, v in semantic["sandbox"].items() if k not in ANNEX_SWITCHES}
    if isinstance(semantic.get("task"), Mapping):
        semantic["task"] = {k: v for k, v in semantic["task"].items() if k not in TASK_ANNEX_SWITCHES}
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


def _group(schema: type[Any], resolved: Mapping[str, Any], key: str) -> Any:
    name = resolved[key].get("name")
    source = "conf/config.yaml" if key == "limits" else f"conf/{key}/{name}.yaml" if name else f"conf/{key}/"
    return knobs.validate(schema, resolved[key], key, f"{source} or the command line")


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
        strategy=resolved["strategy"],
        arm=_group(ArmConfig, resolved, "arm"),
        task=TaskConfig.from_dict(resolved["task"]),
        model=resolved["model"],
        sandbox=resolved["sandbox"],
        tracking=_group(TrackingConfig, resolved, "tracking"),
        limits=_group(Limits, resolved, "limits"),
        rep=rep,
        study=str((resolved.get("study") or {}).get("name", "adhoc")),
        results_dir=Path(str(resolved.get("results_dir") or ROOT / "results")),
        resolved=resolved,
        config_hash=config_hash(resolved),
        resume=bool(resolved.get("resume", True)),
        sample=study_sample(resolved.get("study") or {}),
        agent=resolved.get("agent") if isinstance(resolved.get("agent"), Mapping) else None,
    )


def compose(overrides: list[str] | None = None, return_hydra_config: bool = False) -> DictConfig:
    """Compose the real config outside a Hydra app (tests, tools, bench.preflight)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose(
            config_name="config", overrides=list(overrides or []), return_hydra_config=return_hydra_config
        )
