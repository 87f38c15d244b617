"""One trial, top-down (docs/design.md §2): prepare, resume or skip, play, record.

    run(cfg) -> TrialResult
      prepare         validate every group, build task, strategy and provider: bad input costs nothing
      claim           under a host-wide lock: skip a config already finished (or running) in this
                      study, else create its MLflow run
      play            trace, watchdog, sandbox, the loop, the final tree; cleanup is one ExitStack
      record.finish   event log, artifacts, MLflow; each step guarded (record.py)

How a trial ends is bench.core.outcomes: the loop raises AgentFailure / InfraFailure, the
sandbox SandboxLost, a provider ProviderError; `judged` turns each into the verdict (the
first reason is kept; a failure after the loop replaces a success), before any cleanup.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

import strategies
import tasks
from bench import providers
from bench.config import TrialConfig, load, resolve
from bench.core.outcomes import INTERRUPTED, TrialFailed
from bench.core.registry import Registry
from bench.providers.base import Provider
from bench.sandbox import create as create_sandbox
from bench.sandbox import sweep
from bench.sandbox.base import Mount, Sandbox, SandboxConfig
from bench.tracking import study_budget, tracing
from bench.tracking.runs import TrialRun, previous_runs, trial_claim
from bench.tracking.task_input import log_task_input
from bench.trial.driver import Limits, StepDriver
from bench.trial.loop import LoopPlayer, LoopSettings
from bench.trial.player import PLAYERS, Player
from bench.trial.record import Trial, TrialResult, classify, finish
from bench.trial.watchdog import trial_watchdog
from ctxlog import events as ev
from strategies.base import Strategy
from tasks.spec import TaskSpec

__all__ = ["TrialResult", "run"]

log = logging.getLogger("ctxbench")

# The trial's accelerations (bench/accel/, docs/scaling.md), each loaded by name only when its
# switch is on: a trial with them off (the reference path) imports none.
ANNEXES = Registry(
    "trial annex",
    {
        "check_cache": "bench.accel.checkcache:CheckCache.for_study",  # sandbox.check_cache
        "reuse_acquire": "bench.accel.pool:acquire",  # sandbox.reuse
        "reuse_release": "bench.accel.pool:release",
        "kept_tasks": "bench.accel.kept_tasks:generate",  # task.kept
    },
)


@dataclass(frozen=True)
class Parts:
    """What a trial is made of, built and validated before anything is created."""

    task: TaskSpec
    strategy: Strategy
    provider: Provider
    sandbox: SandboxConfig
    window: int
    max_output: int


@dataclass(frozen=True)
class Prepared:
    """A trial's config, validated, and its parts, built (by bench.preflight, for a plain run)."""

    trial: TrialConfig
    parts: Parts | None  # None: validated only (a sweep's job, a recording provider)

    def close(self) -> None:
        if self.parts is not None:
            _close_quietly(self.parts.provider)


def run(cfg: DictConfig | TrialConfig, prepared: Prepared | None = None) -> TrialResult:
    """One trial; its result is also the Hydra job's return value (bench/__main__.py). With
    `prepared` for this very config (what Hydra composed is what preflight validated), its
    config and parts are used as they are: a trial validates and builds once."""
    if (
        prepared is not None
        and prepared.parts is not None
        and not isinstance(cfg, TrialConfig)
        and resolve(cfg) == prepared.trial.resolved
    ):
        tcfg, parts = prepared.trial, prepared.parts
    else:
        if prepared is not None:
            prepared.close()
        tcfg = cfg if isinstance(cfg, TrialConfig) else load(cfg)
        parts = prepare(tcfg)
    gate = study_budget.Gate.for_trial(tcfg.resolved.get("study") or {}, tcfg.results_dir, tcfg.study)
    with contextlib.ExitStack() as stack:
        stack.callback(_close_quietly, parts.provider)
        stack.callback(gate.release)  # a reservation never outlives the trial, settled or not
        claimed = claim(tcfg, parts.task, gate)
        if isinstance(claimed, TrialResult):
            return claimed
        _tag_server(claimed, parts.provider)
        trial = Trial(tcfg, parts.task, claimed)
        try:
            play(trial, parts)
        finally:
            finish(trial)
            spent = trial.tally()
            gate.settle(spent.cost_usd, spent.usage.prompt + spent.usage.output)
        return trial.result()


def _tag_server(trial_run: TrialRun, provider: Provider) -> None:
    """`model_server`: what the server says about itself, beside the configured identity
    (bench/core/identity.py). Asked once per trial; never a reason for the trial to fail."""
    describe = getattr(provider, "describe_server", None)
    said = describe() if describe else ""
    if said:
        try:
            trial_run.client.set_tag(trial_run.run_id, "model_server", said)
        except Exception:
            log.warning("could not tag model_server", exc_info=True)


def _close_quietly(provider: Provider) -> None:
    try:
        provider.close()
    except Exception:  # a provider that fails to close changes nothing about the trial
        log.warning("closing the provider failed", exc_info=True)


def prepare(tcfg: TrialConfig) -> Parts:
    """Every component validates its own group here (a missing API key fails here too)."""
    # Set by every trial from its own config, so an earlier trial of this process never decides
    # whether this one's tasks (the harness's and the simulated model's) are kept.
    tasks.keep_with(ANNEXES.load("kept_tasks") if tcfg.task.kept else None)
    task = tasks.generate(tcfg.task.family, tcfg.task.seed, **dict(tcfg.task.size))
    if tcfg.arm.drift_kinds is not None:  # an ablation: only these kinds of drift land
        task = dataclasses.replace(task, drift=tuple(d for d in task.drift if d.kind in tcfg.arm.drift_kinds))
    strategy = strategies.make_strategy(tcfg.strategy)
    sandbox = SandboxConfig.from_dict(tcfg.sandbox)
    window = arm_window(tcfg)
    if tcfg.level != tcfg.strategy["name"]:  # an external agent plays: its player and install first
        PLAYERS.load("external").validate(tcfg)
    provider = providers.make_provider(tcfg.model)
    return Parts(task, strategy, provider, sandbox, window, int(tcfg.model["max_output"]))


def arm_window(tcfg: TrialConfig) -> int:
    """The trial's window: the arm's, but never more than the model's (an arm=compaction window of
    12,000 tokens for a model served with 8,192 would overflow the server, not test compaction)."""
    model = int(tcfg.model["window"])
    if tcfg.arm.window and tcfg.arm.window > model:
        log.warning(
            "arm=%s asks for a %d-token window; model %s has %d: the trial uses %d",
            tcfg.arm.name,
            tcfg.arm.window,
            tcfg.model.get("name"),
            model,
            model,
        )
    return min(tcfg.arm.window, model) if tcfg.arm.window else model


def claim(tcfg: TrialConfig, task: TaskSpec, gate: study_budget.Gate) -> TrialRun | TrialResult:
    """This trial's new MLflow run, or the result of the earlier run that makes it unnecessary,
    or `budget_exhausted` (no run: a rerun with a larger budget starts it)."""
    while True:
        with trial_claim(tcfg.results_dir, tcfg.config_hash):  # check-then-create is atomic on this host
            earlier = resume_or_skip(tcfg) if tcfg.resume else None
            if earlier is not None:
                return earlier
            verdict = gate.admit()
            if verdict == study_budget.ADMITTED:
                run = TrialRun(tcfg, {"task_id": task.task_id}, params=False)
                break
            if verdict == study_budget.REFUSED:
                log.info("%s: not started, the study's budget is spent", tcfg.run_name)
                return TrialResult(
                    "",
                    study_budget.BUDGET_EXHAUSTED,
                    False,
                    study_budget.BUDGET_EXHAUSTED,
                    0,
                    Path(""),
                    skipped=True,
                )
        gate.wait()  # the pilot trial runs alone; wait for it outside the lock
    # Outside the lock, which every trial's start on this host waits for: the params are ~40% of
    # what creating the run costs, and only the check and the creation need to be atomic.
    run.log_params()
    # the UI's Dataset column; never raises
    log_task_input(run.client, run.run_id, task, dict(tcfg.task.size))
    return run


def resume_or_skip(tcfg: TrialConfig) -> TrialResult | None:
    prev = previous_runs(tcfg)
    for r in prev:
        if r.info.status == "FINISHED":
            log.info(
                "%s: already finished in study %s (run %s), skipped", tcfg.run_name, tcfg.study, r.info.run_id
            )
            tags = r.data.tags
            return TrialResult(
                r.info.run_id,
                tags.get("status", ""),
                tags.get("status") == "success",
                tags.get("failure_reason", ""),
                int(r.data.metrics.get("turns", 0)),
                Path(""),
                skipped=True,
                outcome_class=tags.get("outcome_class", ""),
            )
    for r in prev:
        if r.info.status == "RUNNING":  # a live process runs it right now (another invocation of this study)
            log.info(
                "%s: running in pid %s on %s (run %s), skipped",
                tcfg.run_name,
                r.data.tags.get("pid"),
                r.data.tags.get("host"),
                r.info.run_id,
            )
            return TrialResult(r.info.run_id, "running", False, "", 0, Path(""), skipped=True)
    return None


@contextlib.contextmanager
def judged(trial: Trial) -> Iterator[None]:
    """Whatever ends the trial becomes its verdict here; an interrupt still propagates."""
    try:
        yield
    except KeyboardInterrupt as exc:
        trial.fail(*classify(exc))
        raise
    except Exception as exc:
        trial.fail(*classify(exc))


def play(trial: Trial, parts: Parts) -> None:
    """Open the trial's record, trace and sandbox, and let the player play. Whatever ends it is
    judged inside the cleanup: the verdict is taken (and the watchdog disarmed) before any
    cleanup runs, which reads it (an interrupted trial's sandbox is not kept) and never raises."""
    tcfg = trial.cfg
    attrs = {"strategy": tcfg.level, "arm": tcfg.arm.name, "task_id": parts.task.task_id, "rep": tcfg.rep}
    with contextlib.ExitStack() as cleanup:
        with judged(trial), trial_watchdog(tcfg.limits.trial_timeout_s):
            trial.open()
            tracing.configure(
                tcfg.tracking.tracing, tracking_uri=tcfg.tracking.uri, experiment=tcfg.tracking.experiment
            )
            root = cleanup.enter_context(tracing.trial_trace(tcfg.run_name, attrs, run_id=trial.run.run_id))
            cleanup.callback(
                lambda: root.set_outputs(
                    {"status": trial.verdict.status, "failure_reason": trial.verdict.reason}
                )
            )
            if tcfg.tracking.tracing:  # the spans follow the events (bench/tracking/tracing.py)
                spans = tracing.TrialSpans()
                assert trial.events is not None
                trial.events.subscribers.append(spans)
                cleanup.callback(spans.close)
            agent = _agent_player(tcfg, parts, _seed(tcfg))  # first: it may mount folders into the sandbox
            sandbox = cleanup.enter_context(sandbox_for(trial, parts, getattr(agent, "mounts", ())))
            driver, player = start(trial, parts, sandbox, agent)
            try:
                driver.run(player)
            except TrialFailed as exc:  # a verdict: the final tree is still recorded
                trial.fail(exc.reason, exc.detail)
            except Exception:  # e.g. provider_error: the tree as the model left it, if the sandbox answers
                with contextlib.suppress(Exception):
                    final_tree(trial, sandbox)
                raise
            final_tree(trial, sandbox)


def final_tree(trial: Trial, sandbox: Sandbox) -> None:
    trial.final_tree_sha = sandbox.tree_sha()
    trial.final_diff = sandbox.git("diff", sandbox.base_commit)


def _seed(tcfg: TrialConfig) -> int:
    return tcfg.task.seed * 1000 + tcfg.rep


def start(
    trial: Trial, parts: Parts, sandbox: Sandbox, agent: Player | None = None
) -> tuple[StepDriver, Player]:
    """Log trial_start; the harness's step driver and the player of the trial: an external agent
    (`agent`, made by `_agent_player`: bench/agents/players.py) or ctxbench's own loop."""
    tcfg, seed = trial.cfg, _seed(trial.cfg)
    assert trial.events is not None, "Trial.open() comes first"
    trial.events.append(
        ev.TrialStart(
            turn=0,
            trial_id=tcfg.config_hash,
            task_id=parts.task.task_id,
            strategy=tcfg.level,
            arm=tcfg.arm.name,
            model=tcfg.model.get("name"),
            rep=tcfg.rep,
            seed=seed,
            window=parts.window,
            max_output=parts.max_output,
            base_commit=sandbox.base_commit,
            config_hash=tcfg.config_hash,
            schema=ev.SCHEMA,
        )
    )
    limits = Limits(
        max_turns=tcfg.limits.max_turns,
        max_turns_per_step=tcfg.limits.max_turns_per_step,
        deadline=trial.started + tcfg.limits.trial_timeout_s,
        drift=tcfg.arm.drift,
    )
    cache = (
        ANNEXES.load("check_cache")(
            tcfg.results_dir,
            tcfg.study,
            {"run_id": trial.run.run_id, "trial": trial.trial_id, "study": tcfg.study},
        )
        if parts.sandbox.check_cache
        else None
    )
    player = agent or LoopPlayer(
        parts.strategy,
        parts.provider,
        LoopSettings(
            window=parts.window,
            max_output=parts.max_output,
            seed=seed,
            exec_timeout_s=parts.sandbox.exec_timeout_s,
        ),
    )
    return StepDriver(parts.task, sandbox, trial.events, limits, cache=cache), player


def _agent_player(tcfg: TrialConfig, parts: Parts, seed: int) -> Player | None:
    """An external agent's player when `agent=` names one (docs/agents.md); None for ctxbench's own
    loop. Imported only then: a trial of the own loop never loads the agents' code."""
    if tcfg.level == tcfg.strategy["name"]:
        return None
    player: Player = PLAYERS.load("external").make(tcfg, parts, seed)
    return player


@contextlib.contextmanager
def sandbox_for(trial: Trial, parts: Parts, mounts: Sequence[Mount] = ()) -> Iterator[Sandbox]:
    """The trial's sandbox (with `sandbox.reuse`, the worker's last one renewed: bench/accel/pool.py;
    with an external agent's `mounts`, read-only folders its player needs inside, always a new one).
    On the way out it is closed or kept for the next trial; if it never came up, or would not
    close, its containers are swept by this run's label."""
    labels = {"ctxbench.study": trial.cfg.study, "ctxbench.run_id": trial.run.run_id}
    sandbox = None
    closed = False
    try:
        files = dict(parts.task.files)
        sandbox = (
            ANNEXES.load("reuse_acquire")(
                parts.sandbox, files, trial.trial_id, labels, make=create_sandbox, mounts=mounts
            )
            if parts.sandbox.reuse
            else create_sandbox(parts.sandbox, files, trial.trial_id, labels, mounts=mounts)
        )
        before = sandbox.cost()
        yield sandbox
    finally:
        if sandbox is not None:
            try:
                after = sandbox.cost()  # what this trial cost the sandbox, for `make bench`
                trial.sandbox_cost = {
                    "sandbox_reused": before["trials"] > 1,
                    **{f"sandbox_{k}": round(after[k] - before.get(k, 0), 4) for k in after if k != "trials"},
                }
            except Exception:
                log.warning("reading the sandbox's cost failed", exc_info=True)
            try:
                interrupted = trial.verdict.outcome_class == INTERRUPTED
                if parts.sandbox.reuse:
                    ANNEXES.load("reuse_release")(sandbox, parts.sandbox, labels, interrupted=interrupted)
                else:
                    sandbox.close(interrupted=interrupted)
                closed = True
            except Exception:
                log.warning("closing the sandbox failed; sweeping by label", exc_info=True)
        if not closed and parts.sandbox.kind == "docker":
            try:
                sweep({"ctxbench.run_id": trial.run.run_id})
            except Exception:
                log.warning("sweeping the sandbox by label failed", exc_info=True)
