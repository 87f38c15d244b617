"""What one certification costs through the real Docker sandbox (`make bench`: `certify`).

A step check with its standing invariant probes and the final acceptance (pytest over the
whole suite; and again with the family's hidden checks, as the loop runs it) are certified on a
fresh sandbox of the default task, `n` times each, the median, quartiles and extremes kept:
everything `certify` does (put back protected files, scan, the judge's copy of the committed
tree, the exec, a server and a comparer per part, the judge's report) is in the figure. The
hidden checks' cost is the difference of the two finals' medians, beside how many hidden parts
the judge ran (read from the `check` event each one logged, so a label that ran none says so).
Next to it, one `docker exec` of `true` and one container start: the floors a check stands on;
and the start of the judge's own container (docker.py), which the first exec of the judge's in a
sandbox pays once.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any


def certify_cost(family: str, n: int) -> dict[str, Any]:
    import tasks
    from bench.config import compose
    from bench.eventlog.writer import EventLog
    from bench.sandbox import SandboxConfig, create
    from bench.trial.certify import HarnessCopy, certify
    from ctxlog import events as ev
    from ctxlog.reader import Log

    cfg = SandboxConfig.from_dict(compose(["sandbox=docker"]).sandbox)
    spec = tasks.generate(family, 0)
    step = spec.steps[0]
    probes = [i for i in spec.invariants if i.check][:4]
    out: dict[str, Any] = {"family": family, "n": n}
    with tempfile.TemporaryDirectory(prefix="ctxbench-checkcost-") as tmp:
        log = EventLog(Path(tmp) / "events.jsonl")
        t0 = time.perf_counter()
        sb = create(cfg, dict(spec.files), f"bench-certify-{uuid.uuid4().hex[:6]}")
        out["container_start_s"] = round(time.perf_counter() - t0, 3)
        try:
            t0 = time.perf_counter()
            sb.exec("true", judge=True)  # the first exec of the judge's starts the judge's container
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            sb.exec("true", judge=True)
            out["judge_container_start_s"] = round(first - (time.perf_counter() - t0), 3)
            copy = HarnessCopy(spec)
            # "final_hidden": the final acceptance as the loop runs it, with the family's hidden
            # checks (bench/trial/hidden_checks.py); "final" labels it as a step: without them
            for label, command, invs, as_step in (
                ("step_check", step.check, probes, step.id),
                ("final", spec.final_check, [], step.id),
                ("final_hidden", spec.final_check, [], "final"),
            ):
                certify(sb, copy, log, 0, as_step, command, invs)  # warm
                xs = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    certify(sb, copy, log, 0, as_step, command, invs)
                    xs.append(time.perf_counter() - t0)
                hidden = Log.from_path(log.path).of(ev.Check)[-1].hidden  # the last run's verdict
                out[label] = {
                    "command": command,
                    "probes": len(invs),
                    "hidden_parts": len(hidden["parts"]) if hidden else 0,
                    **spread(xs),
                }
            xs = []
            for _ in range(n):
                t0 = time.perf_counter()
                sb.exec("true")
                xs.append(time.perf_counter() - t0)
            out["exec_true_ms_p50"] = spread(xs)["ms_p50"]
        finally:
            sb.close()
    return out


def spread(xs: list[float]) -> dict[str, Any]:
    """Median, quartiles and extremes in ms: on a shared machine the spread says how far to trust it."""
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return {
        "n": len(xs),
        "ms_p50": round(statistics.median(xs) * 1000, 1),
        "ms_iqr": [round(q[0] * 1000, 1), round(q[2] * 1000, 1)],
        "ms_range": [round(min(xs) * 1000, 1), round(max(xs) * 1000, 1)],
        "ms": [round(x * 1000, 1) for x in xs],
    }


def certify_text(cost: dict[str, Any]) -> str:
    """The table's line for `certify_cost`'s figures."""
    step, final, hidden = cost["step_check"], cost["final"], cost.get("final_hidden")
    return (
        f"certify (judge's copy + launcher as root + per part a server as the agent's uid and a comparer "
        f"as a third uid): step check with {step['probes']} probes {step['ms_p50']} ms (IQR {step['ms_iqr']}), "
        f"final {final['ms_p50']} ms (IQR {final['ms_iqr']})"
        + (
            f", final with its hidden checks ({hidden['hidden_parts']} part{'' if hidden['hidden_parts'] == 1 else 's'}) "
            f"{hidden['ms_p50']} ms (IQR {hidden['ms_iqr']}): "
            f"the hidden checks cost {round(hidden['ms_p50'] - final['ms_p50'], 1)} ms"
            if hidden
            else ""
        )
        + f", n={step['n']}; exec `true` {cost['exec_true_ms_p50']} ms"
        + (
            f"; the judge's container starts once per sandbox, {cost['judge_container_start_s']} s"
            if "judge_container_start_s" in cost
            else ""
        )
    )
