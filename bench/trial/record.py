"""A trial as it is played and recorded: its verdict, its event log and artifacts, its MLflow run.

Every event of a trial is written through one `Recorder`: its event log, then each subscriber
(tracing: bench/tracking/tracing.py `TrialSpans`).

`Trial.fail` feeds bench.core.outcomes.Verdict (the first reason is kept; a later one is an
`error` event, and never gives back a success). `finish` closes the event log, writes the
artifacts and ends the MLflow run, each step guarded: a step that fails (a full disk, a
database error) is logged, makes the trial an infrastructure failure, and the next step
still runs; if MLflow itself cannot take the verdict, the run is at least marked FAILED.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from bench.config import TrialConfig
from bench.core.outcomes import INFRA, STATUS_TAG, TrialFailed, Verdict
from bench.core.types import sha256_text
from bench.eventlog.measures import step_curves, trial_measures
from bench.eventlog.tally import Tally, tally
from bench.eventlog.writer import CRASH_DETAIL_CHARS, EventLog
from bench.providers.base import ContextOverflow, ProviderError
from bench.sandbox.base import SandboxLost
from bench.sandbox.content import ContentError
from bench.tracking.runs import TrialRun
from bench.trial.run_md import write_run_md
from bench.trial.tidy_errors import error_kinds
from ctxlog import events as ev
from ctxlog.reader import Log
from tasks.spec import TaskSpec

log = logging.getLogger("ctxbench")


class Recorder(EventLog):
    """The trial's one writer of events: the event log first, then each subscriber, in order. A
    subscriber that fails is logged and changes nothing about the trial."""

    def __init__(self, path: Path, blob_chars: int | None = None) -> None:
        super().__init__(path, blob_chars)
        self.subscribers: list[Callable[[ev.Event], None]] = []

    def append(self, event: ev.Event) -> dict[str, Any]:
        record = super().append(event)
        for subscriber in self.subscribers:
            try:
                subscriber(event)
            except Exception:
                log.warning("a subscriber of the event log failed on %s", event.kind, exc_info=True)
        return record


@dataclass(frozen=True)
class TrialResult:
    run_id: str
    status: str  # success | failure | error | killed (| running, when skipped)
    success: bool
    failure_reason: str
    turns: int
    events_path: Path
    skipped: bool = False
    outcome_class: str = (
        ""  # bench.core.outcomes: success | agent_failure | infrastructure_failure | interrupted
    )


def classify(exc: BaseException) -> tuple[str, str]:
    """(failure reason, detail) of an exception that ended a trial."""
    if isinstance(exc, TrialFailed):
        return exc.reason, exc.detail
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", f"interrupted ({exc or 'Ctrl-C'})"
    if isinstance(exc, SandboxLost):
        return "sandbox_lost", str(exc)
    if isinstance(exc, ContentError):  # raised at the one boundary around the agent's files
        return "content_error", f"{type(exc).__name__}: {exc}"
    if isinstance(exc, ContextOverflow):
        return "context_overflow", str(exc)
    if isinstance(exc, ProviderError):
        return "provider_error", str(exc)
    log.error("trial crashed", exc_info=exc)
    return "harness_error", f"{type(exc).__name__}: {exc}"


@dataclass
class Trial:
    cfg: TrialConfig
    task: TaskSpec
    run: TrialRun
    verdict: Verdict = field(default_factory=Verdict)
    trial_id: str = ""
    out_dir: Path | None = None
    events: Recorder | None = None
    final_diff: str = ""
    final_tree_sha: str = ""
    # volatile: `make bench` reads it (trial_end `t`)
    sandbox_cost: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def open(self) -> None:
        """The trial's folder, event log and config (may fail: a full disk, say)."""
        self.trial_id = f"{self.cfg.config_hash}-{uuid.uuid4().hex[:8]}"
        self.out_dir = self.cfg.results_dir / "trials" / self.trial_id
        self.events = Recorder(self.out_dir / "events.jsonl", self.cfg.tracking.blob_chars or None)
        (self.out_dir / "config.yaml").write_text(
            OmegaConf.to_yaml(OmegaConf.create(dict(self.cfg.resolved)))
        )

    def fail(self, reason: str, detail: str = "") -> None:
        kept = self.verdict.fail(reason, detail)
        if kept and self.verdict.outcome_class != INFRA and reason != "interrupted":
            return  # an agent failure is the trial's verdict: trial_end carries it
        try:
            if self.events is not None:
                self.events.append(
                    ev.Error(
                        turn=self.tally().turns, reason=reason, detail=detail[:CRASH_DETAIL_CHARS], kept=kept
                    )
                )
        except Exception:  # the log itself may be what failed
            log.warning("could not log the failure %s", reason, exc_info=True)

    def tally(self) -> Tally:
        """The trial's counts and totals so far, read from its log (bench/eventlog/tally.py)."""
        return tally(self.events.log() if self.events is not None else [])

    def result(self) -> TrialResult:
        v = self.verdict
        return TrialResult(
            self.run.run_id,
            v.status,
            v.success,
            v.reason,
            self.tally().turns,
            self.out_dir / "events.jsonl" if self.out_dir else Path(""),
            outcome_class=v.outcome_class,
        )


def finish(trial: Trial) -> None:
    """Write what is left of the trial and end its MLflow run; never raises."""
    v = trial.verdict
    so_far = trial.tally()
    wall = time.monotonic() - trial.started
    out = trial.out_dir
    events = trial.events

    def guarded(what: str, step: Callable[[], object]) -> None:
        try:
            step()
        except Exception as exc:
            log.warning("recording the trial: %s failed", what, exc_info=True)
            trial.fail("harness_error", f"recording the trial: {what} failed: {type(exc).__name__}: {exc}")

    if out is not None and events is not None:
        guarded("final.diff", lambda: (out / "final.diff").write_text(trial.final_diff))
        guarded(
            "trial_end event",
            lambda: events.append(
                ev.TrialEnd(
                    turn=so_far.turns,
                    success=v.success,
                    status=v.status,
                    outcome_class=v.outcome_class,
                    failure_reason=v.reason,
                    steps_passed=so_far.steps_passed,
                    final_tree_sha=trial.final_tree_sha,
                    t={"wall_s": round(wall, 3), **trial.sandbox_cost},
                )
            ),
        )
        guarded("event log close", events.close)
        guarded(
            "events.jsonl.sha256",
            lambda: (out / "events.jsonl.sha256").write_text(
                sha256_text((out / "events.jsonl").read_text()) + "\n"
            ),
        )
    o = trial.tally()  # the verdict too, now that trial_end is in the log
    if out is not None and events is not None:
        guarded(
            "RUN.md", lambda: write_run_md(out / "RUN.md", trial.cfg, trial.task, o, v.status, events.log())
        )
    try:
        digest = (out / "events.jsonl.sha256").read_text().strip() if out else ""
    except OSError:
        digest = ""
    tags = {
        "status": v.status,
        "failure_reason": v.reason,
        "outcome_class": v.outcome_class,
        "final_tree_sha": trial.final_tree_sha,
        "events_sha256": digest,
    }
    records = events.log() if events is not None else Log([])  # parsed once for every reader below
    answered = list(dict.fromkeys(c.model_id for c in records.of(ev.ModelCall) if c.model_id))
    if (
        len(answered) > 1
    ):  # the provider changed the model mid-trial: the trial's `model` tag is not the whole story
        tags["model_ids"] = ",".join(answered)
    try:
        trial.run.finish(
            v.mlflow_status,
            tags=tags,
            final={**final_metrics(o, wall), **trial_measures(records), **error_kinds(trial.task, records)},
            per_turn=step_curves(records, o.per_turn),
            artifacts=out,
        )
    except Exception as exc:
        log.error(
            "MLflow could not take the verdict of run %s; marking it FAILED", trial.run.run_id, exc_info=True
        )
        trial.verdict.fail("harness_error", f"recording the trial in MLflow failed: {exc}")
        _abandon(trial)
    log.info(
        "%s: %s%s in %d turns",
        trial.cfg.run_name,
        trial.verdict.status,
        f" ({trial.verdict.reason})" if trial.verdict.reason else "",
        o.turns,
    )


def _abandon(trial: Trial) -> None:
    """Leave the run FAILED rather than RUNNING (if even that fails, the next resume marks it
    KILLED: its process is gone by then)."""
    client, run_id = trial.run.client, trial.run.run_id
    try:
        for key, value in (
            ("status", STATUS_TAG[INFRA]),
            ("failure_reason", trial.verdict.reason),
            ("outcome_class", trial.verdict.outcome_class),
        ):
            client.set_tag(run_id, key, value)
    except Exception:
        log.warning("could not tag run %s", run_id, exc_info=True)
    try:
        client.set_terminated(run_id, status="FAILED")
    except Exception:
        log.error("could not end run %s; the next resume will mark it KILLED", run_id, exc_info=True)


def final_metrics(o: Tally, wall_s: float) -> dict[str, float]:
    u = o.usage
    prompt = u.prompt
    return {
        "success": float(o.success),
        "steps_passed": o.steps_passed,
        "first_failed_step": o.first_failed_step,
        "turns": o.turns,
        "tokens_input_total": prompt,
        "tokens_output_total": u.output,
        "tokens_cache_read_total": u.cache_read,
        "tokens_cache_write_total": u.cache_write,
        "cache_hit_ratio": (u.cache_read / prompt) if prompt else 0.0,
        "cost_usd": o.cost_usd,
        "latency_s": o.latency_s,
        "wall_s": wall_s,
        **{k: float(v) for k, v in o.counts.items()},
    }
