"""`make bench`'s table of both regimes (issue 24 item 5), each figure next to its target or floor.

(a) I/O-bound, a real model's study: many trials in flight in one process against an emulated
    rate limit (bench/perf/inflight.py): trials in flight, harness memory per trial in flight,
    the trials' span against what the limit allows, the limiter's saturation.
(b) CPU-bound, the sim grid (bench/perf/grid.py): CPU seconds per trial split harness /
    the study's containers / the engine, and the grid's projected minutes next to its floor:
    what Docker alone (containers + engine) costs on this machine's cores, which no harness
    cut can go below, and the harness's target (at or below the sandbox's CPU).
"""

from __future__ import annotations

import os
from typing import Any

HARNESS_GB = 4.0  # the harness's processes for 128 trials in flight hold at most this
IN_FLIGHT = 128
WALL_OVER_IDEAL = 1.05

Row = tuple[str, str, str, str, str]


def _row(name: str, value: float | None, cmp: str, target: float | None, note: str = "") -> Row:
    if value is None:
        return name, "unreadable", "", "", note
    if target is None:
        return name, f"{value:g}", "", "", note
    if cmp == "floor":  # what no cut can go below: shown beside, never a verdict
        return name, f"{value:g}", f"floor {target:g}", "", note
    ok = value <= target if cmp == "<=" else value >= target
    return name, f"{value:g}", f"{cmp} {target:g}", "ok" if ok else "MISSED", note


def io_rows(r: dict[str, Any]) -> list[Row]:
    sat = {k: v for k, v in r["saturation"].items() if v is not None}
    return [
        _row(
            "io.trials_in_flight",
            r["trials_in_flight_peak"],
            ">=",
            min(IN_FLIGHT, r["trials"]),
            f"{r['trials']} trials, one process, hydra/launcher=ctxbench_threads, sandbox={r['sandbox']}"
            + (
                "" if r["trials"] >= IN_FLIGHT else f"; the {IN_FLIGHT} target: --inflight-trials {IN_FLIGHT}"
            ),
        ),
        _row(
            "io.harness_mb_per_trial_in_flight",
            r["harness_mb_per_trial_in_flight"],
            "<=",
            round(HARNESS_GB * 1024 / IN_FLIGHT, 1),
            f"peak RSS {r['harness_rss_peak_mb']} MB; its children {r['children_rss_peak_mb']} MB"
            + (
                f"; {r['containers_peak']} containers {r['containers_mem_peak_mb']} MB"
                if r.get("containers_peak")
                else ""
            ),
        ),
        _row(
            "io.span_over_ideal",
            r["span_over_ideal"],
            "<=",
            WALL_OVER_IDEAL,
            f"{r['trials_span_s']} s vs {r['ideal_s']} s, the ideal from {r['ideal_from']}",
        ),
        _row(
            "io.limiter_saturation",
            max(sat.values()) if sat else None,
            "",
            None,
            f"{sat}; {r['http_429']} HTTP 429s, {r['calls']} calls",
        ),
    ]


def cpu_rows(g: dict[str, Any], grid_trials: int, cores: int | None = None) -> list[Row]:
    cores = cores or os.cpu_count() or 1
    cpu = g["cpu_s_per_trial"]
    sandbox = (cpu["containers"] or 0.0) + (cpu["engine"] or 0.0) if cpu["containers"] is not None else None
    floor = round(sandbox * grid_trials / cores / 60, 2) if sandbox is not None else None
    check = g.get("containers_cross_check_s_per_trial") or {}
    by = g.get("harness_cpu_s_per_trial") or {}
    target = round(sandbox, 3) if sandbox is not None else None
    grid = g.get("harness_s_per_grid_trial") or {}
    return [
        _row(
            "cpu.harness_s_per_trial",
            cpu["harness"],
            "" if grid else "<=",
            None if grid else target,
            f"the slice's {g['trials']} trials, its start and close included; by process: "
            + ", ".join(f"{k} {v}" for k, v in by.items()),
        ),
        *(
            [
                _row(
                    "cpu.harness_s_per_grid_trial",
                    grid["s_per_trial"],
                    "<=",
                    target,
                    f"target: at or below the sandbox's (containers + engine); {grid['per_trial_s']} s a trial "
                    f"and {grid['once_s']} s once a study (its start, each worker's start and close), spread "
                    f"over the grid's {grid_trials} trials as a whole grid spreads it",
                )
            ]
            if grid
            else []
        ),
        _row(
            "cpu.harness_less_model_s_per_trial",
            _less(cpu["harness"], g.get("model_cpu_s_per_trial")),
            "",
            None,
            f"the harness less its in-process model's calls ({g.get('model_cpu_s_per_trial')} s: the sim's "
            "thinking, done on the provider's machines for a real model); shown beside, not the target",
        ),
        _row(
            "cpu.containers_s_per_trial",
            cpu["containers"],
            "",
            None,
            f"the study's {check.get('study_containers', '?')} containers, each from its own cgroup; "
            f"the trials' windows alone {check.get('trials_windows')}, every container on the machine "
            f"{check.get('machine_cgroup')}",
        ),
        _row(
            "cpu.engine_s_per_trial",
            cpu["engine"],
            "",
            None,
            {
                "cgroup": "dockerd, containerd, the shims and the runc each exec starts (their cgroups)",
                "daemons": "dockerd, containerd and the shims alone (runc not counted: their cgroup is the machine's or holds the containers')",
            }.get(g.get("engine_measure", "daemons"), "no engine found"),
        ),
        _row(
            "cpu.other_s_per_trial",
            cpu["other"],
            "",
            None,
            f"the rest of the machine's busy time (other users); cores busy {g['cores_busy']}",
        ),
        _row(
            "cpu.grid_minutes_projected",
            g["grid_minutes"],
            "floor",
            floor,
            f"{grid_trials} trials from {g['trials']} ({'extrapolated' if g['extrapolated'] else 'whole'}), "
            f"{g['n_jobs']} workers; the floor: Docker alone on {cores} cores"
            + (f"; with the harness at the sandbox's CPU {round(2 * floor, 2)}" if floor is not None else ""),
        ),
    ]


def _less(total: float | None, part: float | None) -> float | None:
    return round(total - part, 3) if total is not None and part is not None else None


def regimes_rows(report: dict[str, Any], grid_trials: int) -> list[Row]:
    rows: list[Row] = []
    if "inflight" in report:
        rows += io_rows(report["inflight"])
    if report.get("grid", {}).get("cpu_s_per_trial"):
        rows += cpu_rows(report["grid"], grid_trials, report.get("cpus"))
    return rows
