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
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from bench.config import ROOT

GRID_SEEDS = 100
GRID_TRIALS = 4 * 4 * 3 * GRID_SEEDS  # strategies x arms x families x seeds
SLICE_SEEDS = 7  # 3 families x 7 seeds x 16 cells = 336 trials


def grid_run(results: Path, full: bool, n_jobs: int) -> dict[str, Any]:
    study = f"bench-grid-{uuid.uuid4().hex[:6]}"
    seeds = GRID_SEEDS if full else SLICE_SEEDS
    cmd = [sys.executable, "-m", "bench", "-m", "experiment=grid", f"task.seed=range(0,{seeds})",
           f"study.name={study}", f"hydra.launcher.n_jobs={n_jobs}"]
    env = {**os.environ, "CTXBENCH_RESULTS": str(results)}
    t0, t0_epoch = time.perf_counter(), time.time()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"grid run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    (sweep_dir,) = (results / "hydra" / "multirun" / study).iterdir()
    recs = [json.loads(x) for x in (sweep_dir / "progress.jsonl").read_text().splitlines()]
    n = len(recs)
    first_start = min(r["ts"] - r["wall_s"] for r in recs)  # when the first trial started
    startup = max(0.0, min(first_start - t0_epoch, wall))
    return {"trials": n, "n_jobs": n_jobs, "wall_s": round(wall, 1), "command": " ".join(cmd[1:]),
            "trial_wall_s_p50": round(statistics.median(r["wall_s"] for r in recs), 2),
            "outcomes": {o: sum(1 for r in recs if r["outcome"] == o) for o in {r["outcome"] for r in recs}},
            "startup_s": round(startup, 1),  # process start, imports, sweep validation, workers
            "grid_minutes": round((startup + (wall - startup) * GRID_TRIALS / n) / 60, 2),
            "extrapolated": n != GRID_TRIALS}
