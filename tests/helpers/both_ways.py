"""One plan run both ways at once: joblib (one trial per worker process) and the threads
launcher (every trial in one process). Two tests read it: the threads launcher's (the same
records both ways) and `bench.perf.same_records`'s (the before/after check it rests on), so the
two studies run once per session instead of once per test module."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.config import ROOT

PLAN = [
    "strategy=raw,ledger",
    "arm=baseline,drift",
    "sandbox=local",
    "++task.size.steps=6",
    "study.name=both",
]


@dataclass(frozen=True)
class BothWays:
    processes: Path  # results folder of the joblib study
    threads: Path  # results folder of the threads study
    threads_output: str
    # Each side's records as `same_records.records` read them right after the studies ended:
    # same_records' own tests change the threads side in place afterwards.
    records: tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]


def _start(results: Path, *launcher: str) -> subprocess.Popen:
    env = {**os.environ, "CTXBENCH_RESULTS": str(results), "PYTHONUNBUFFERED": "1"}
    env.pop("CTXBENCH_STUDY", None)
    return subprocess.Popen(
        [sys.executable, "-m", "bench", "-m", *PLAN, *launcher],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(proc: subprocess.Popen) -> str:
    try:
        out = proc.communicate(timeout=900)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, out[-3000:]
    return out


def run_both_ways(root: Path) -> BothWays:
    from bench.perf.same_records import records

    processes, threads = root / "processes", root / "threads"
    # Both studies at once, each in its own results folder: neither reads the other's store, and
    # the comparison leaves out timings, so the one-process study fills the second core while the
    # two joblib workers share both.
    joblib = _start(processes, "hydra/launcher=ctxbench_joblib", "hydra.launcher.n_jobs=2")
    threaded = _start(threads, "hydra/launcher=ctxbench_threads", "hydra.launcher.n_jobs=4")
    try:
        _finish(joblib)
    finally:
        out = _finish(threaded)
    return BothWays(processes, threads, out, (records(processes), records(threads)))
