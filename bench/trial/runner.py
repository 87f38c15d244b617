"""One trial end to end: task, sandbox, strategy, provider, loop, MLflow (DESIGN §2)."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

import tasks
from bench.config import TrialConfig, load
from bench.core.types import sha256_text
from bench.eventlog.events import EventLog
from bench.trial.loop import LoopSettings, Outcome, TrialFailed, TrialLoop
from bench.trial.run_md import write_run_md

log = logging.getLogger("ctxbench")

# Failures of the infrastructure, not of the agent: the run ends FAILED (excluded from the
# analysis, rerun on resume), never FINISHED with a verdict it did not earn.
INFRA_FAILURES = {"sandbox_lost", "provider_error", "harness_error", "timeout"}


@dataclass(frozen=True)
class TrialResult:
    run_id: str
    status: str  # success | failure | error | killed
    success: bool
    failure_reason: str
    turns: int
    events_path: Path
    skipped: bool = False


def run(cfg: DictConfig | TrialConfig) -> TrialResult:
    tcfg = cfg if isinstance(cfg, TrialConfig) else load(cfg)
    from bench.providers import make_provider
    from bench.sandbox import create as create_sandbox
    from bench.sandbox.base import SandboxConfig, SandboxLost
    from strategies import make_strategy

    # Validate every group before anything is created, so bad input costs nothing.
    task = tasks.generate(tcfg.task.family, tcfg.task.seed, **dict(tcfg.task.size))
    if tcfg.arm.drift_kinds is not None:  # an ablation: only these kinds of drift land
        task = replace(task, drift=tuple(d for d in task.drift if d.kind in tcfg.arm.drift_kinds))
    strategy = make_strategy(tcfg.strategy)
    sandbox_cfg = SandboxConfig.from_dict(tcfg.sandbox)
    window = tcfg.arm.window or int(tcfg.model["window"])
    max_output = int(tcfg.model["max_output"])
    provider = make_provider(tcfg.model)  # a missing API key fails here, before any run exists

    from bench.tracking.runs import TrialRun, previous_runs, trial_claim
    from bench.tracking.task_input import log_task_input
    from bench.trial.watchdog import trial_watchdog

    with trial_claim(tcfg.results_dir):  # check-then-create is atomic across this host's processes
        if tcfg.resume:
            prev = previous_runs(tcfg)
            done = [r for r in prev if r.info.status == "FINISHED"]
            if done or any(r.info.status == "RUNNING" for r in prev):
                provider.close()
            if done:
                r = done[0]
                log.info("%s: already finished in study %s (run %s), skipped", tcfg.run_name, tcfg.study,
                         r.info.run_id)
                return TrialResult(r.info.run_id, r.data.tags.get("status", ""),
                                   r.data.tags.get("status") == "success", r.data.tags.get("failure_reason", ""),
                                   int(r.data.metrics.get("turns", 0)), Path(""), skipped=True)
            live = [r for r in prev if r.info.status == "RUNNING"]
            if live:  # a live process runs it right now (another invocation of this study)
                r = live[0]
                log.info("%s: running in pid %s on %s (run %s), skipped", tcfg.run_name, r.data.tags.get("pid"),
                         r.data.tags.get("host"), r.info.run_id)
                return TrialResult(r.info.run_id, "running", False, "", 0, Path(""), skipped=True)
        run = TrialRun(tcfg, {"task_id": task.task_id})
        log_task_input(run.client, run.run_id, task, dict(tcfg.task.size))  # the UI's Dataset column

    nonce = uuid.uuid4().hex[:8]
    out_dir = tcfg.results_dir / "trials" / f"{tcfg.config_hash}-{nonce}"
    events = EventLog(out_dir / "events.jsonl")
    (out_dir / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(dict(tcfg.resolved))))
    started = time.monotonic()
    outcome, status, mlflow_status, reason = Outcome(), "error", "FAILED", "harness_error"
    sandbox = None
    final_diff = ""
    from bench.tracking import tracing

    tracing.configure(tcfg.tracking.tracing, tracking_uri=tcfg.tracking.uri,
                      experiment=tcfg.tracking.experiment)
    trace = tracing.trial_trace(tcfg.run_name, {"strategy": tcfg.strategy["name"], "arm": tcfg.arm.name,
                                                "task_id": task.task_id, "rep": tcfg.rep}, run_id=run.run_id)
    root = trace.__enter__()
    watchdog = trial_watchdog(tcfg.limits.trial_timeout_s)  # ends a trial stuck inside one call
    try:
        watchdog.__enter__()
        sandbox = create_sandbox(sandbox_cfg, dict(task.files), f"{tcfg.config_hash}-{nonce}",
                                 labels={"ctxbench.study": tcfg.study, "ctxbench.run_id": run.run_id})
        events.append("trial_start", 0, trial_id=tcfg.config_hash, task_id=task.task_id,
                      strategy=tcfg.strategy["name"], arm=tcfg.arm.name, model=tcfg.model.get("name"),
                      rep=tcfg.rep, seed=tcfg.task.seed * 1000 + tcfg.rep, window=window,
                      max_output=max_output, base_commit=sandbox.base_commit, config_hash=tcfg.config_hash)
        settings = LoopSettings(window=window, max_output=max_output, max_turns=tcfg.limits.max_turns,
                                max_turns_per_step=tcfg.limits.max_turns_per_step,
                                deadline=started + tcfg.limits.trial_timeout_s,
                                seed=tcfg.task.seed * 1000 + tcfg.rep, drift=tcfg.arm.drift,
                                exec_timeout_s=sandbox_cfg.exec_timeout_s)
        loop = TrialLoop(task, sandbox, strategy, provider, events, settings)
        try:
            outcome = loop.run()
            status, mlflow_status, reason = "success", "FINISHED", ""
        except TrialFailed as exc:
            outcome = loop.out
            reason = exc.reason
            status, mlflow_status = ("error", "FAILED") if reason in INFRA_FAILURES else ("failure", "FINISHED")
        finally:
            outcome = loop.out
        outcome.final_tree_sha = sandbox.tree_sha()
        final_diff = sandbox.git("diff", sandbox.base_commit)
    except SandboxLost as exc:
        reason = "sandbox_lost"
        events.append("error", len(outcome.per_turn), reason=reason, detail=str(exc)[:500])
    except TrialFailed as exc:  # the watchdog fired outside the loop (sandbox start, final tree)
        reason = exc.reason
        events.append("error", len(outcome.per_turn), reason=reason, detail=str(exc)[:500])
    except KeyboardInterrupt:
        status, mlflow_status, reason = "killed", "KILLED", "interrupted"
        raise
    except Exception as exc:
        from bench.providers.base import ProviderError

        reason = "provider_error" if isinstance(exc, ProviderError) else "harness_error"
        events.append("error", len(outcome.per_turn), reason=reason,
                      detail=f"{type(exc).__name__}: {exc}"[:2000])
        if reason == "harness_error":
            log.exception("trial crashed")
    finally:
        watchdog.disarm()
        root.set_outputs({"status": status, "failure_reason": reason})
        trace.__exit__(None, None, None)
        outcome.turns = len(outcome.per_turn)
        outcome.failure_reason = reason
        wall = time.monotonic() - started
        events.append("trial_end", outcome.turns, success=status == "success", status=status,
                      failure_reason=reason, steps_passed=outcome.steps_passed,
                      final_tree_sha=outcome.final_tree_sha, t={"wall_s": round(wall, 3)})
        events.close()
        (out_dir / "events.jsonl.sha256").write_text(sha256_text((out_dir / "events.jsonl").read_text()) + "\n")
        (out_dir / "final.diff").write_text(final_diff)
        write_run_md(out_dir / "RUN.md", tcfg, task, outcome, status, events.records)
        for closer in (sandbox, provider):
            try:
                if closer is not None:
                    closer.close(interrupted=status == "killed") if closer is sandbox else closer.close()
            except Exception:  # cleanup must never mask the trial's own outcome
                log.warning("cleanup failed", exc_info=True)
        if sandbox is None and sandbox_cfg.kind == "docker":  # interrupted mid-create: remove by label
            from bench.sandbox import sweep

            try:
                sweep({"ctxbench.run_id": run.run_id})
            except Exception:
                log.warning("sweep after a failed sandbox start failed", exc_info=True)
        from bench.eventlog.measures import step_curves, trial_measures

        run.finish(mlflow_status, tags={"status": status, "failure_reason": reason,
                                        "final_tree_sha": outcome.final_tree_sha,
                                        "events_sha256": (out_dir / "events.jsonl.sha256").read_text().strip()},
                   final={**final_metrics(outcome, wall), **trial_measures(events.records)},
                   per_turn=step_curves(events.records, outcome.per_turn), artifacts=out_dir)
    log.info("%s: %s%s in %d turns", tcfg.run_name, status, f" ({reason})" if reason else "", outcome.turns)
    return TrialResult(run.run_id, status, status == "success", reason, outcome.turns, out_dir / "events.jsonl")


def final_metrics(o: Outcome, wall_s: float) -> dict[str, float]:
    u = o.usage
    prompt = u.prompt
    return {
        "success": float(o.success), "steps_passed": o.steps_passed, "first_failed_step": o.first_failed_step,
        "turns": o.turns, "tokens_input_total": prompt, "tokens_output_total": u.output,
        "tokens_cache_read_total": u.cache_read, "tokens_cache_write_total": u.cache_write,
        "cache_hit_ratio": (u.cache_read / prompt) if prompt else 0.0, "cost_usd": o.cost_usd,
        "latency_s": o.latency_s, "wall_s": wall_s, **{k: float(v) for k, v in o.counts.items()},
    }
