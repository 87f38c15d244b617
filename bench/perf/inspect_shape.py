"""The issue's inspect_ai figure, to set beside `bench.perf.inflight` (docs/scaling.md §2): N
samples in one process, each 30 waits of 4 s (a provider's latency), each wait followed by a
sandbox exec (`sandbox="local"`), the model a mock. Prints wall, the ideal (30 x 4 s) and peak
RSS as JSON. It imports nothing of ctxbench, so it runs in a venv that has inspect_ai:

    python -m venv /tmp/iv && /tmp/iv/bin/pip install inspect-ai==0.3.285
    /tmp/iv/bin/python bench/perf/inspect_shape.py --samples 32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import threading
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--samples", type=int, default=32)
    p.add_argument("--waits", type=int, default=30)
    p.add_argument("--wait-s", type=float, default=4.0)
    a = p.parse_args(argv)

    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.util import sandbox

    @solver
    def waits_and_execs():  # type: ignore[no-untyped-def]
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            for _ in range(a.waits):
                await asyncio.sleep(a.wait_s)
                result = await sandbox().exec(["true"])
                assert result.success
            return state

        return solve

    peak = {"rss": 0}
    stop = threading.Event()

    def poll() -> None:  # this process's RSS now (ru_maxrss would count the import peak too)
        while not stop.wait(0.25):
            with open("/proc/self/statm") as f:
                peak["rss"] = max(peak["rss"], int(f.read().split()[1]) * resource.getpagesize())

    threading.Thread(target=poll, daemon=True).start()
    task = Task(
        dataset=[Sample(input=f"sample {i}", target="") for i in range(a.samples)],
        solver=waits_and_execs(),
        sandbox="local",
    )
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as logs:
        (log,) = eval(task, model="mockllm/model", max_samples=a.samples, display="none", log_dir=logs)
    wall = time.perf_counter() - t0
    stop.set()
    ideal = a.waits * a.wait_s
    print(
        json.dumps(
            {
                "tool": "inspect_ai",
                "status": log.status,
                "samples": a.samples,
                "wall_s": round(wall, 1),
                "ideal_s": ideal,
                "wall_over_ideal": round(wall / ideal, 3),
                "rss_peak_mb": round(peak["rss"] / 2**20, 1),
                "mb_per_sample_in_flight": round(peak["rss"] / 2**20 / a.samples, 2),
                "cpu_s": round(
                    sum(
                        resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime
                        for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                    ),
                    1,
                ),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
