"""`make bench` (`python -m bench.perf`): harness cost, measured in one run on this machine.

Writes `<results>/bench.json` (results = $CTXBENCH_RESULTS or ./results) and prints a table.
Every trial, MLflow store and Hydra dir it makes lives in a temp dir, removed afterwards.

| metric | what | target |
|---|---|---|
| exec_overhead_ratio | harness `sandbox.exec` median / raw `docker exec` CLI median, same command, same container | <= 1.15 |
| trial_overhead_ratio | trial wall / (container start + sum of check durations), default sim trial | <= 1.5 |
| grid_minutes | the 4,800-trial sim grid (3 families x 100 seeds x 16 cells), 2 workers; from a 336-trial slice | <= 30 |
| context_build_ms_p50/_p95 | ledger strategy build(), largest default task | p50 <= 10 |
| mlflow_log_s_per_trial | resume check + run creation + params + metrics/tags + artifacts | <= 0.5 |
| task_generate_ms | per family, default size, warm | < 50 |
| (certify) | a step check with its probes and the final acceptance through `certify` (bench.perf.checkcost) | reported |
| plan_s | hashing the 480-job grid's plan at multirun start (bench.study.plan) | <= 60 |
| (agents) | the model proxy's overhead per request (p50, p99) and memory per agent trial in flight (bench.perf.agents) | reported |
| (annexes) | each annex switched off alone against all on, a 48-trial slice of the grid, 3 rounds (bench.perf.annexes) | reported |

Where a trial's time goes is measured by wrapping the harness's own functions (self time,
nested phases subtracted): `phases` in bench.json. That instrumentation is bench.perf.phases;
this module owns the other measures, the targets, the table and the command line.

    python -m bench.perf                 # everything; the grid from a 336-trial slice
    python -m bench.perf --grid-full     # run the whole 4,800-trial grid instead (slow)
    python -m bench.perf --skip-grid     # no multirun at all
    python -m bench.perf --grid-override ++task.size.steps=6   # the slice of the CPU cuts (docs/scaling.md)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.config import ROOT
from bench.perf import annexes, inflight
from bench.perf.checkcost import certify_cost, certify_text
from bench.perf.grid import GRID_TRIALS, SLICE_SEEDS, grid_run
from bench.perf.phases import Phases as Phases  # re-exported: `make bench` tests import it from here
from bench.perf.phases import instrumented_trial
from bench.perf.regimes import regimes_rows

TARGETS = {  # metric: (comparison, target)
    "exec_overhead_ratio": ("<=", 1.15),
    "trial_overhead_ratio": ("<=", 1.5),
    "grid_minutes": ("<=", 30.0),
    "context_build_ms_p50": ("<=", 10.0),
    "mlflow_log_s_per_trial": ("<=", 0.5),
    "task_generate_ms": ("<", 50.0),
    "plan_s": ("<=", 60.0),
}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


# ------------------------------------------------------------------------------ measures
def task_generate_ms() -> dict[str, Any]:
    import tasks

    out = {}
    for family in tasks.FAMILIES:
        t0 = time.perf_counter()
        spec = tasks.generate(family, 0)
        cold = (time.perf_counter() - t0) * 1000
        warm = []
        for seed in range(1, 8):
            t0 = time.perf_counter()
            tasks.generate(family, seed)
            warm.append((time.perf_counter() - t0) * 1000)
        out[family] = {
            "warm_ms_p50": round(statistics.median(warm), 2),
            "cold_ms": round(cold, 2),
            "files": len(spec.files),
            "bytes": sum(len(v) for v in dict(spec.files).values()),
            "steps": len(spec.steps),
        }
    return out


def plan_s() -> dict[str, Any]:
    from bench.study.plan import plan_trials, sweep_config
    from bench.study.progress import planned_jobs

    with sweep_config(["experiment=grid"]) as master:
        jobs = planned_jobs(master) or []
        t0 = time.perf_counter()
        plan_trials(master, jobs)
        return {"jobs": len(jobs), "s": round(time.perf_counter() - t0, 2)}


def exec_overhead(family: str, n: int) -> dict[str, Any]:

    import tasks
    from bench.config import compose
    from bench.sandbox import SandboxConfig, create

    cfg = SandboxConfig.from_dict(compose(["sandbox=docker"]).sandbox)
    spec = tasks.generate(family, 0)
    starts = []
    sb = None
    for _ in range(3):  # container start (host working copy + `docker run`), median of 3
        t0 = time.perf_counter()
        s = create(cfg, dict(spec.files), f"bench-exec-{uuid.uuid4().hex[:6]}")
        starts.append(time.perf_counter() - t0)
        if sb is None:
            sb = s
        else:
            s.close()
    assert sb is not None
    cid = sb.container_id  # type: ignore[attr-defined]
    step_check = spec.steps[0].check

    # The step check fails on the untouched task (the step is not done): same work either way.
    def harness(cmd: str) -> float:
        t0 = time.perf_counter()
        sb.exec(cmd)
        return time.perf_counter() - t0

    def raw(cmd: str) -> float:
        t0 = time.perf_counter()
        subprocess.run(["docker", "exec", "-w", "/work", cid, "sh", "-c", cmd], capture_output=True)
        return time.perf_counter() - t0

    try:
        out: dict[str, Any] = {"container_start_s_p50": round(statistics.median(starts), 3)}
        for label, cmd, reps in (("true", "true", n), ("step_check", step_check, max(5, n // 6))):
            harness(cmd), raw(cmd)  # warm both paths
            h, r = [], []
            for _ in range(reps):  # interleaved: machine load hits both alike
                h.append(harness(cmd))
                r.append(raw(cmd))
            out[label] = {
                "command": cmd,
                "n": reps,
                "harness_ms_p50": round(statistics.median(h) * 1000, 2),
                "raw_docker_exec_ms_p50": round(statistics.median(r) * 1000, 2),
                "ratio": round(statistics.median(h) / statistics.median(r), 3),
            }
        # What a check pays before its first test runs (interpreter, pytest import) in the container.
        for label, cmd in (
            ("python_start", "python3 -B -c pass"),
            ("pytest_start", "python3 -B -m pytest --version"),
        ):
            xs = [sb.exec(cmd).duration_s for _ in range(5)]
            out[f"in_container_{label}_ms_p50"] = round(statistics.median(xs) * 1000, 1)
        return out
    finally:
        sb.close()


def process_start_s() -> float:
    """A fresh interpreter importing what a trial process needs (paid once per worker)."""
    code = (
        "import bench.__main__, bench.trial.runner, bench.providers, bench.study.callback, strategies, tasks, "
        "mlflow.tracking, mlflow.entities, docker"
    )
    xs = []
    for _ in range(2):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
        xs.append(time.perf_counter() - t0)
    return round(min(xs), 3)


# ---------------------------------------------------------------------------------- main
def _row(name: str, value: Any, note: str = "") -> tuple[str, str, str, str, str]:
    cmp, target = TARGETS.get(name.split("[")[0], ("", None))
    if target is None or not isinstance(value, int | float):
        return name, f"{value}", "", "", note
    ok = value <= target if cmp == "<=" else value < target
    return name, f"{value:g}", f"{cmp} {target:g}", "ok" if ok else "MISSED", note


def table(rows: list[tuple[str, str, str, str, str]]) -> str:
    head = ("metric", "value", "target", "", "note")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([line(head), "  ".join("-" * w for w in widths), *map(line, rows)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perf", description="harness micro/macro benchmarks")
    p.add_argument("--grid-full", action="store_true", help=f"run all {GRID_TRIALS} grid trials (slow)")
    p.add_argument("--skip-grid", action="store_true", help="no multirun")
    p.add_argument("--grid-seeds", type=int, default=SLICE_SEEDS, help="seeds per family in the grid's slice")
    p.add_argument(
        "--grid-override", action="append", default=[], help="one more override of the grid's slice"
    )
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--exec-n", type=int, default=30)
    p.add_argument("--out", type=Path, default=None, help="default: <results>/bench.json")
    p.add_argument("--keep", action="store_true", help="keep the temp results dir")
    p.add_argument(
        "--inflight-trials", type=int, default=32, help="I/O-bound regime: trials in flight (0: skip)"
    )
    p.add_argument(
        "--proxy-requests", type=int, default=200, help="agent trials: requests through the proxy (0: skip)"
    )
    p.add_argument(
        "--agent-trials", type=int, default=4, help="agent trials: mini trials in flight for memory (0: skip)"
    )
    p.add_argument(
        "--annex-rounds",
        type=int,
        default=annexes.ROUNDS,
        help="what each annex buys: rounds of every variant (0: skip)",
    )
    p.add_argument(
        "--annex-seeds", type=int, default=annexes.SLICE_SEEDS, help="task seeds of the annexes' slice"
    )
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    for noisy in ("mlflow", "alembic", "ctxbench", "bench"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    results_dir = Path(os.environ.get("CTXBENCH_RESULTS") or ROOT / "results")
    out_path = a.out or results_dir / "bench.json"
    tmp = Path(tempfile.mkdtemp(prefix="ctxbench-bench-"))
    t_start = time.perf_counter()
    report: dict[str, Any] = {
        "when_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": os.uname().nodename,
        "cpus": os.cpu_count(),
        "load_avg_start": [round(x, 2) for x in os.getloadavg()],
    }
    try:
        from bench.tracking.runs import code_version

        report["code_version"] = code_version()
        print("task generation ...", flush=True)
        gen = task_generate_ms()
        report["task_generate"] = gen
        largest = max(gen, key=lambda f: gen[f]["bytes"])
        report["largest_default_task"] = largest
        print("the grid's plan ...", flush=True)
        report["plan"] = plan_s()
        print("process start ...", flush=True)
        report["process_start_s"] = process_start_s()
        print("sandbox exec vs docker exec ...", flush=True)
        report["exec"] = exec_overhead(largest, a.exec_n)
        print("certification: judge and judged apart ...", flush=True)
        report["certify"] = certify_cost(largest, max(5, a.exec_n // 6))
        print("default sim trial (instrumented) ...", flush=True)
        default = instrumented_trial([], tmp / "trial-default")
        report["default_trial"] = default
        if largest == "signature_migration":  # the default family: the default trial is ledger on it
            builds = default["context_build_ms"]
        else:
            print(f"ledger trial on the largest default task ({largest}) ...", flush=True)
            big = instrumented_trial([f"task={largest}", "strategy=ledger"], tmp / "trial-largest")
            report["largest_task_trial"] = big
            builds = big["context_build_ms"]
        if not a.skip_grid:
            print(f"grid {'(full)' if a.grid_full else '(slice)'} with {a.n_jobs} workers ...", flush=True)
            report["grid"] = grid_run(
                tmp / "grid", a.grid_full, a.n_jobs, a.grid_seeds, tuple(a.grid_override)
            )
        if a.annex_rounds and not a.skip_grid:  # what each annex buys (bench/perf/annexes.py)
            print("each annex off alone against all on ...", flush=True)
            report["annexes"] = annexes.annexes_run(tmp / "annexes", a.annex_seeds, a.annex_rounds, a.n_jobs)
        if a.inflight_trials:  # 600 RPM, 1M input TPM, paced like a hosted model (bench/perf/inflight.py)
            print(f"{a.inflight_trials} trials in flight against an emulated rate limit ...", flush=True)
            report["inflight"] = inflight.inflight_run(
                tmp / "inflight", a.inflight_trials, a.inflight_trials, 600, 1_000_000, 1.0
            )
        if a.proxy_requests:  # the model proxy and external agents' trials (bench/perf/agents.py)
            print(
                "agent trials: the model proxy's overhead, memory per agent trial in flight ...", flush=True
            )
            from bench.perf import agents

            report["agents"] = agents.run(a.proxy_requests, a.agent_trials, tmp / "agents")
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    ex = report["exec"]
    metrics: dict[str, Any] = {
        "exec_overhead_ratio": ex["true"]["ratio"],
        "trial_overhead_ratio": default["trial_overhead_ratio"],
        "grid_minutes": report["grid"]["grid_minutes"] if "grid" in report else None,
        "context_build_ms_p50": round(pct(builds, 0.5), 3),
        "context_build_ms_p95": round(pct(builds, 0.95), 3),
        "mlflow_log_s_per_trial": default["mlflow_log_s"],
        **{f"task_generate_ms[{f}]": g["warm_ms_p50"] for f, g in gen.items()},
        "plan_s": report["plan"]["s"],
    }
    report["metrics"] = metrics
    report["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    report["bench_wall_s"] = round(time.perf_counter() - t_start, 1)

    g = report.get("grid")
    rows = [
        _row(
            "exec_overhead_ratio",
            metrics["exec_overhead_ratio"],
            f"`true`: {ex['true']['harness_ms_p50']} vs {ex['true']['raw_docker_exec_ms_p50']} ms; step check: "
            f"{ex['step_check']['harness_ms_p50']:.0f} vs {ex['step_check']['raw_docker_exec_ms_p50']:.0f} ms",
        ),
        _row(
            "trial_overhead_ratio",
            metrics["trial_overhead_ratio"],
            f"wall {default['wall_s']} s / (container {default['container_start_s']} s + "
            f"{default['checks']} checks {default['check_s']} s)",
        ),
        _row(
            "grid_minutes",
            metrics["grid_minutes"],
            "not run"
            if g is None
            else (
                f"EXTRAPOLATED: {g['trials']} trials (seeds 0-{g['trials'] // 48 - 1}, 3 families, 16 cells) in {g['wall_s']} s = "
                f"{g['startup_s']} s startup + trials x {GRID_TRIALS}/{g['trials']}"
                if g["extrapolated"]
                else f"full grid, {g['trials']} trials in {g['wall_s']} s"
            )
            + f", {g['n_jobs'] if g else ''} workers",
        ),
        _row(
            "context_build_ms_p50", metrics["context_build_ms_p50"], f"ledger on {largest}, n={len(builds)}"
        ),
        _row("context_build_ms_p95", metrics["context_build_ms_p95"], ""),
        _row(
            "mlflow_log_s_per_trial",
            metrics["mlflow_log_s_per_trial"],
            "resume check + run create/params + metrics/tags + artifacts; once per worker process: "
            f"open store {default['mlflow_store_open_s']} s (new db: {default['mlflow_store_init_s']} s)",
        ),
        *[
            _row(
                f"task_generate_ms[{f}]",
                v["warm_ms_p50"],
                f"cold {v['cold_ms']} ms, {v['files']} files, {v['bytes']} bytes",
            )
            for f, v in gen.items()
        ],
        _row("plan_s", metrics["plan_s"], f"{report['plan']['jobs']} jobs hashed (experiment=grid)"),
    ]
    text = table(rows)
    phases = default["phases_s"]
    total = default["wall_s"]
    text += (
        f"\n\nwhere the default trial's {total} s go (self time; {default['turns']} turns, "
        f"{default['steps']} steps):\n"
    )
    text += "\n".join(
        f"  {k:<40} {v:8.3f} s  {100 * v / total:5.1f}%  ({default['phase_calls'].get(k, 0)} calls)"
        for k, v in phases.items()
    )
    text += (
        f"\n  per-process start (interpreter + imports): {report['process_start_s']} s, paid once per worker"
        f"\n  in the container: python start {ex['in_container_python_start_ms_p50']} ms, pytest start "
        f"{ex['in_container_pytest_start_ms_p50']} ms (per check)"
        f"\n  {certify_text(report['certify'])}"
        f"\n  load average at start/end: {report['load_avg_start']} / {report['load_avg_end']} on "
        f"{report['cpus']} cpus"
    )
    both = regimes_rows(report, GRID_TRIALS)
    if both:  # one table, both regimes (bench/perf/regimes.py); the I/O run's details after it
        text += "\n\nboth regimes, each figure beside its target or floor:\n" + table(both)
    if "annexes" in report:
        text += "\n\n" + annexes.text(report["annexes"])
    if "inflight" in report:
        text += "\n\n" + inflight.text(report["inflight"])
    if "agents" in report:
        from bench.perf import agents

        text += "\n\n" + agents.text(report["agents"])
    report["table"] = text
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\n{text}\n\nwritten: {out_path}")
    return 0
