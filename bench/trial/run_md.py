"""RUN.md: the human-readable handoff of a trial's state, written beside its event log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.config import TrialConfig
from bench.core.identity import model_identity
from bench.eventlog.tally import Tally
from ctxlog import events as ev
from ctxlog.reader import Log
from tasks.spec import TaskSpec


def write_run_md(
    path: Path, cfg: TrialConfig, task: TaskSpec, o: Tally, status: str, records: list[dict[str, Any]] | Log
) -> None:
    log = Log.read(records)
    verdicts = {e.step: e.status for e in log.of(ev.StepStatus)}
    lines = [
        f"# {cfg.run_name}",
        "",
        f"- status: **{status}**" + (f" ({o.failure_reason})" if o.failure_reason else ""),
        f"- task: `{task.task_id}` — {task.title}",
        f"- strategy `{cfg.strategy['name']}`, arm `{cfg.arm.name}`, model `{model_identity(cfg.model)}`, rep {cfg.rep}",
        f"- steps passed: {o.steps_passed}/{len(task.steps)}; turns: {o.turns}; "
        f"prompt tokens: {o.usage.prompt} (cache reads {o.usage.cache_read}); cost: ${o.cost_usd:.4f}",
        f"- compactions {o.counts.get('compactions', 0)}, context truncations "
        f"{o.counts.get('context_truncations', 0)}, drift events {o.counts.get('drift_events', 0)}, "
        f"invariant violations {o.counts.get('invariant_violations', 0)}, policy violations "
        f"{o.counts.get('policy_violations', 0)}",
        f"- final tree: {f'`{o.final_tree_sha}`' if o.final_tree_sha else '(not recorded: the sandbox did not answer)'}; "
        f"config hash `{cfg.config_hash}`",
        "",
        "## Plan",
        "",
    ]
    for s in task.steps:
        mark = {"passed": "x"}.get(verdicts.get(s.id, ""), " ")
        state = verdicts.get(s.id, "not reached")
        lines.append(f"- [{mark}] `{s.id}` {s.title} — {state}; check `{s.check}`")
    failures = [c for c in log.of(ev.Check) if not (c.passed if c.passed is not None else c.exit_code == 0)]
    if failures:
        last = failures[-1]
        lines += ["", f"## Last failing check ({last.step})", "", "```", last.output[-1500:], "```"]
    lines += [
        "",
        "## Verify",
        "",
        "`python -m bench.eventlog.verify events.jsonl` rebuilds every model-visible context "
        "from this log and checks the hash chain.",
        "",
    ]
    path.write_text("\n".join(lines))
