"""A trial's counts and totals, from its event log alone (docs/design.md §10).

The loop only plays and logs; what MLflow records of a trial -- steps passed, turns, tokens,
cost, latency, the counts of compactions, truncations, drift, violations -- is read back from
the log here, through the one reader (ctxlog/reader.py). A log holds every figure: a model
call logs its usage, cost and timings (`t.latency_s`, `t.ttft_s`, `t.queue_s`, `t.attempts`),
so an old log reads too (one without `t.attempts` had no retries counted: 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.core.types import Usage
from ctxlog import events as ev
from ctxlog.reader import Log

COUNTS = (
    "compactions",
    "context_truncations",
    "output_truncations",
    "drift_events",
    "invariant_violations",
    "policy_violations",
    "processes_killed",
    "tool_errors",
    "queue_ms",
    "provider_retries",
)  # waiting for the rate limiter or a slot; retried attempts (429s ...)


@dataclass
class Tally:
    success: bool = False
    failure_reason: str = ""
    steps_passed: int = 0
    first_failed_step: int = -1
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    latency_s: float = 0.0
    counts: dict[str, int] = field(default_factory=lambda: {k: 0 for k in COUNTS})
    per_turn: list[dict[str, float]] = field(default_factory=list)
    final_tree_sha: str = ""


def tally(records: list[dict[str, Any]] | Log) -> Tally:
    """What the log says of the trial so far (the verdict, once `trial_end` is written)."""
    log = Log.read(records)
    out = Tally()
    c = out.counts
    for call in log.calls:
        if call.reply is not None:
            _call(out, call.reply, call.context.tokens)
    for e in log.events:
        out.steps_passed += isinstance(e, ev.StepStatus) and e.status == "passed"
        c["compactions"] += isinstance(e, ev.Compaction)
        c["context_truncations"] += isinstance(e, ev.ContextTruncation)
        c["output_truncations"] += isinstance(e, ev.OutputTruncation)
        c["drift_events"] += isinstance(e, ev.Drift)
        c["invariant_violations"] += isinstance(e, ev.Invariant) and e.status == "violated"
        c["policy_violations"] += isinstance(e, ev.PolicyViolation)
        c["processes_killed"] += len(e.processes) if isinstance(e, ev.ProcessKilled) else 0
        c["tool_errors"] += isinstance(e, ev.ToolError)
    out.turns = len(out.per_turn)
    end = log.end
    if end is not None:
        out.success, out.failure_reason, out.final_tree_sha = (
            end.success,
            end.failure_reason,
            end.final_tree_sha,
        )
        heads = log.of(ev.StepStart)
        if end.failure_reason == "step_failed" and heads:  # the step that ran out of turns
            out.first_failed_step = heads[-1].index
    return out


def _call(out: Tally, e: ev.ModelCall, context_tokens: int) -> None:
    u = e.usage
    usage = Usage(
        int(u.get("input", 0)),
        int(u.get("output", 0)),
        int(u.get("cache_read", 0)),
        int(u.get("cache_write", 0)),
    )
    out.usage = out.usage + usage
    out.cost_usd += e.cost_usd
    latency = float(e.t.get("latency_s", 0.0))
    out.latency_s += latency
    out.counts["queue_ms"] += round(1000 * float(e.t.get("queue_s", 0.0)))
    out.counts["provider_retries"] += int(e.t.get("attempts", 1)) - 1
    if e.purpose == "turn":
        cum = (out.per_turn[-1]["cumulative_tokens"] if out.per_turn else 0) + usage.prompt
        out.per_turn.append(
            {
                "prompt_tokens": usage.prompt,
                "cached_tokens": usage.cache_read,
                "output_tokens": usage.output,
                "context_tokens": context_tokens,
                "cumulative_tokens": cum,
                "harness_tokens": e.tokens_harness,
                "turn_latency_s": latency,
                "ttft_s": float(e.t.get("ttft_s", 0.0)),
            }
        )
