"""The grid figure of `make bench`: the sim grid a powered study needs, 3 task families x 100
task seeds x 16 strategy/arm cells = 4,800 trials, with the default 2 local workers and the
grid's defaults (check cache and sandbox reuse on). Measured on a slice of every cell of 7
seeds per family (336 trials) and extrapolated, or run whole with --grid-full.

The extrapolation keeps the sweep's startup (imports, validation, workers) once and scales
the rest with the number of trials; the slice spans all families and cells, so the mix of
task sizes and strategies is the grid's own. A slice cannot show how the check cache fills
over 100 seeds (hits come within one task seed: its 16 cells), which is why the seeds are
whole.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench.config import ROOT
from bench.perf.containers import StudyContainers, engine_cpu_s, trials_window_cpu_s
from bench.sandbox.engine import cgroup_cpu_s
from ctxlog import events as ev
from ctxlog.reader import Log

GRID_SEEDS = 100
GRID_TRIALS = 4 * 4 * 3 * GRID_SEEDS  # strategies x arms x families x seeds
SLICE_SEEDS = 7  # 3 families x 7 seeds x 16 cells = 336 trials


def _machine_cpu_s() -> tuple[dict[str, float | None], str]:
    """Cumulative CPU seconds: the whole machine busy (/proc/stat), every container (the
    engine's cgroup, v1 or v2 with the cgroupfs driver) and the engine (containers.engine_cpu_s:
    its cgroups, or its daemons alone), and how the engine was read. None where unreadable."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, float | None] = {"busy": None, "containers": None, "engine": None}
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:8]]
        out["busy"] = (sum(fields) - fields[3] - fields[4]) / tick  # all but idle and iowait
    except (OSError, ValueError):
        pass
    for path in ("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage", "/sys/fs/cgroup/docker/cpu.stat"):
        try:
            text = Path(path).read_text()
        except OSError:
            continue
        out["containers"] = cgroup_cpu_s(text)
        break
    out["engine"], measure = engine_cpu_s()
    return out, measure


class ProcessTree(threading.Thread):
    """CPU seconds of a process tree by role, polled from /proc every 0.3 s while it runs: the
    launching process, the workers (loky's), and what the workers started and reaped (host git,
    the local sandbox's commands). A process's last poll stands for it (it may have run <0.3 s more)."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.stop = root, threading.Event()
        self.last: dict[int, tuple[str, list[float]]] = {}  # pid: (role, [utime, stime, cutime, cstime])
        self.startup: float | None = None

    def run(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self.stop.wait(0.3):
            parent: dict[int, int] = {}
            times: dict[int, list[float]] = {}
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    rest = stat.read_text().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    continue
                pid = int(stat.parent.name)
                parent[pid], times[pid] = int(rest[1]), [int(x) / tick for x in rest[11:15]]
            tree, grew = {self.root}, True
            while grew:
                new = {p for p, pp in parent.items() if pp in tree} - tree
                tree |= new
                grew = bool(new)
            for pid in tree & times.keys():
                if pid not in self.last:
                    try:
                        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()[:300].decode(errors="replace")
                    except OSError:
                        cmd = ""
                    role = "launcher" if pid == self.root else "worker" if "loky" in cmd.lower() else "other"
                    self.last[pid] = (role, times[pid])
                    if role == "worker" and self.startup is None and self.root in self.last:
                        # the launcher's CPU before the first job
                        self.startup = sum(self.last[self.root][1][:2])
                else:
                    self.last[pid] = (self.last[pid][0], times[pid])

    def workers(self) -> dict[int, float]:
        """pid -> the CPU a worker used in all (its last poll)."""
        return {pid: t[0] + t[1] for pid, (r, t) in self.last.items() if r == "worker"}

    def split(self) -> dict[str, float]:
        own = lambda role: sum(t[0] + t[1] for r, t in self.last.values() if r == role)  # noqa: E731
        return {
            "launcher": own("launcher"),
            "launcher_startup": self.startup or 0.0,
            "workers": own("worker"),
            "workers_children": sum(t[2] + t[3] for r, t in self.last.values() if r == "worker"),
        }


def cpu_split(
    before: dict[str, float | None],
    after: dict[str, float | None],
    harness_s: float,
    trials: int,
    containers_s: float | None = None,
) -> dict[str, float | None]:
    """CPU seconds per trial: the harness (the study's own processes and their git children),
    the study's own containers (`containers_s`, bench.perf.containers; without it, every
    container on the machine), the engine, and the rest of the machine's busy time."""
    d = {
        k: (after[k] - before[k]) if after[k] is not None and before[k] is not None else None  # type: ignore[operator]
        for k in before
    }
    own = containers_s if containers_s is not None else d["containers"]
    split: dict[str, float | None] = {"harness": harness_s, "containers": own, "engine": d["engine"]}
    known = sum(v for v in split.values() if v is not None)
    split["other"] = max(0.0, d["busy"] - known) if d["busy"] is not None else None
    return {k: (round(v / trials, 3) if v is not None else None) for k, v in split.items()}


def startup_cpu_s(
    recs: list[dict[str, Any]], workers: dict[int, float], launcher_startup: float
) -> float | None:
    """The harness's CPU that a study pays once, not per trial: the launcher's before its first job,
    and each worker process's beyond its trials. A worker's trials are read from the CPU its
    process had used at the end of each job (`cpu_s` in progress.jsonl): its first job's figure,
    less what a later job costs on average, is its start (imports, MLflow's first connection,
    the first sandbox); what it used after its last job is its close. A process of the pool that
    ran no job (loky's resource tracker) is all start. None without two jobs in one worker."""
    ends = {
        pid: sorted((r["ts"], r["cpu_s"]) for r in recs if r.get("pid") == pid and "cpu_s" in r)
        for pid in workers
    }
    later = [(e[-1][1] - e[0][1], len(e) - 1) for e in ends.values() if len(e) >= 2]
    if not later:
        return None
    per_job = sum(cpu for cpu, _ in later) / sum(n for _, n in later)
    fixed = launcher_startup
    for pid, total in workers.items():
        jobs = ends[pid]
        fixed += total if not jobs else max(0.0, jobs[0][1] - per_job) + max(0.0, total - jobs[-1][1])
    return fixed


def trials_model_cpu_s(results: Path) -> float | None:
    """The CPU the trials' threads spent inside their provider's `complete` (`model_call` `t.cpu_s`):
    for the sim all of its thinking, which a real model does on its provider's machines."""
    total, found = 0.0, False
    for log in (results / "trials").glob("*/events.jsonl"):
        for call in Log.from_path(log).of(ev.ModelCall):
            if "cpu_s" in call.t:
                total, found = total + float(call.t["cpu_s"]), True
    return total if found else None


def grid_run(
    results: Path,
    full: bool,
    n_jobs: int,
    seeds: int = SLICE_SEEDS,
    overrides: tuple[str, ...] = (),
) -> dict[str, Any]:
    """`overrides`: more of the grid's command line (e.g. `++task.size.steps=6`, the slice the
    CPU cuts of docs/scaling.md were measured on), recorded in the result's `command`."""
    study = f"bench-grid-{uuid.uuid4().hex[:6]}"
    seeds = GRID_SEEDS if full else seeds
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "-m",
        "experiment=grid",
        f"task.seed=range(0,{seeds})",
        f"study.name={study}",
        f"hydra.launcher.n_jobs={n_jobs}",
        *overrides,
    ]
    env = {**os.environ, "CTXBENCH_RESULTS": str(results)}
    (cpu0, measure0), kids0 = _machine_cpu_s(), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, t0_epoch = time.perf_counter(), time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tree, boxes = ProcessTree(proc.pid), StudyContainers(study)
    tree.start()
    boxes.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    tree.stop.set()
    boxes.stop.set()
    tree.join()
    boxes.join()
    (cpu1, measure1), kids1 = _machine_cpu_s(), resource.getrusage(resource.RUSAGE_CHILDREN)
    if measure0 != measure1:  # two ways of reading it do not subtract: unreadable, not a made-up figure
        cpu0["engine"] = cpu1["engine"] = None
    harness = (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"grid run failed ({proc.returncode}):\n{stderr[-3000:]}")
    (sweep_dir,) = (results / "hydra" / "multirun" / study).iterdir()
    recs = [json.loads(x) for x in (sweep_dir / "progress.jsonl").read_text().splitlines()]
    n = len(recs)
    first_start = min(r["ts"] - r["wall_s"] for r in recs)  # when the first trial started
    startup = max(0.0, min(first_start - t0_epoch, wall))
    return {
        "trials": n,
        "n_jobs": n_jobs,
        "wall_s": round(wall, 1),
        "command": " ".join(cmd[1:]),
        "trial_wall_s_p50": round(statistics.median(r["wall_s"] for r in recs), 2),
        "outcomes": {o: sum(1 for r in recs if r["outcome"] == o) for o in {r["outcome"] for r in recs}},
        "startup_s": round(startup, 1),  # process start, imports, sweep validation, workers
        "grid_minutes": round((startup + (wall - startup) * GRID_TRIALS / n) / 60, 2),
        "extrapolated": n != GRID_TRIALS,
        # Where the time goes: CPU seconds per trial, and how busy the machine's cores were.
        "cpu_s_per_trial": cpu_split(cpu0, cpu1, harness, n, boxes.total_s()),
        "engine_measure": measure1,  # "cgroup": runc counted; "daemons": not
        # The containers' figure two other ways: every container on the machine (other
        # studies' too), and only the trials' own windows (no start, renewal or close).
        "containers_cross_check_s_per_trial": {
            "machine_cgroup": cpu_split(cpu0, cpu1, harness, n)["containers"],
            "trials_windows": round(w / n, 3) if (w := trials_window_cpu_s(results)) is not None else None,
            "study_containers": len(boxes.last),
        },
        # The harness's part by process: the launcher (plan, joblib's polling, the study run),
        # the workers' own Python, and what the workers started (host git); the rest of the
        # harness figure is what the poll missed (processes shorter than a poll).
        "harness_cpu_s_per_trial": {k: round(v / n, 3) for k, v in tree.split().items()},
        # The harness per trial of the grid itself: what the slice paid once (the study's
        # start, each worker's start and close) spread over the grid's trials, as a whole
        # grid spreads it, and the rest per trial as measured.
        "harness_s_per_grid_trial": _per_grid_trial(
            harness, n, startup_cpu_s(recs, tree.workers(), tree.split()["launcher_startup"])
        ),
        "model_cpu_s_per_trial": round(m / n, 3) if (m := trials_model_cpu_s(results)) is not None else None,
        "cores_busy": (
            round((cpu1["busy"] - cpu0["busy"]) / wall / (os.cpu_count() or 1), 2)
            if cpu0["busy"] is not None and cpu1["busy"] is not None
            else None
        ),
    }


def _per_grid_trial(harness_s: float, trials: int, once_s: float | None) -> dict[str, float] | None:
    if once_s is None:
        return None
    return {
        "once_s": round(once_s, 2),
        "per_trial_s": round((harness_s - once_s) / trials, 3),
        "s_per_trial": round((harness_s - once_s) / trials + once_s / GRID_TRIALS, 3),
    }
