"""Where a trial's time goes, for `make bench` (bench.perf.benchmark): one trial run in this
process with the harness's own functions wrapped, each phase timed as self time (nested
phases subtracted); plus what opening the MLflow store costs a new worker process.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.config import ROOT
from ctxlog import events as ev
from ctxlog.reader import Log


class Phases:
    """Self time per phase: a phase's nested phases are subtracted from it."""

    def __init__(self) -> None:
        self.self_s: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.samples: dict[str, list[float]] = defaultdict(list)
        self._stack: list[list[float]] = []  # [start, child time]
        self._undo: list[Callable[[], None]] = []

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._stack.append([time.perf_counter(), 0.0])
        try:
            yield
        finally:
            start, child = self._stack.pop()
            took = time.perf_counter() - start
            self.self_s[name] += took - child
            self.calls[name] += 1
            self.samples[name].append(took)
            if self._stack:
                self._stack[-1][1] += took

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        real = getattr(owner, attr)
        is_static = isinstance(owner, type) and isinstance(owner.__dict__.get(attr), staticmethod)

        @functools.wraps(real)
        def timed(*a: Any, **kw: Any) -> Any:
            with self.phase(name):
                return real(*a, **kw)

        setattr(owner, attr, staticmethod(timed) if is_static else timed)
        self._undo.append(lambda: setattr(owner, attr, staticmethod(real) if is_static else real))

    def restore(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


class _TimedProvider:
    def __init__(self, inner: Any, ph: Phases) -> None:
        self.inner, self.ph, self.model_id = inner, ph, inner.model_id

    def complete(self, *a: Any, **kw: Any) -> Any:
        with self.ph.phase("model calls (sim)"):
            return self.inner.complete(*a, **kw)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _TimedStrategy:
    def __init__(self, inner: Any, ph: Phases) -> None:
        self.inner, self.ph = inner, ph

    def build(self, state: Any) -> Any:
        with self.ph.phase("context build"):
            return self.inner.build(state)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def instrumented_trial(overrides: list[str], results: Path) -> dict[str, Any]:
    """One trial in this process, every harness phase timed."""
    import mlflow.tracking

    import bench.providers
    import bench.sandbox
    import bench.tracking.runs
    import bench.trial.certify
    import bench.trial.record
    import bench.trial.runner
    import bench.trial.steps
    import strategies
    import tasks
    from bench.config import compose, load
    from bench.eventlog.writer import EventLog
    from bench.sandbox.docker import DockerSandbox
    from bench.sandbox.workcopy import WorkingCopy
    from bench.trial.tools import Tools

    saved = os.environ.get("CTXBENCH_RESULTS")
    os.environ["CTXBENCH_RESULTS"] = str(results)
    try:
        # A fresh study name: the resume check runs (and finds nothing), as in a real study.
        tcfg = load(compose([*overrides, f"study.name=bench-{uuid.uuid4().hex[:6]}"]))
    finally:
        if saved is None:
            os.environ.pop("CTXBENCH_RESULTS", None)
        else:
            os.environ["CTXBENCH_RESULTS"] = saved
    # The store's one-off costs (creating the sqlite schema, or checking it: once per process and
    # database) are measured apart from the per-trial cost.
    from bench.tracking.runs import _client, experiment_id

    t0 = time.perf_counter()
    experiment_id(_client(tcfg.tracking.uri), tcfg.tracking.experiment, tcfg.tracking.artifact_root)
    store_init = time.perf_counter() - t0
    ph = Phases()
    for owner, attr, name in [
        (tasks, "generate", "task generate"),
        (bench.tracking.runs, "previous_runs", "mlflow: resume check"),
        (bench.tracking.runs.TrialRun, "__init__", "mlflow: run create + params"),
        (bench.tracking.runs, "code_version", "code version (git, per run)"),
        (bench.tracking.runs.TrialRun, "finish", "mlflow: metrics + tags"),
        (mlflow.tracking.MlflowClient, "log_artifacts", "mlflow: artifacts"),
        (WorkingCopy, "__init__", "working copy (host git init + commit)"),
        (DockerSandbox, "_run_container", "container start"),
        (DockerSandbox, "close", "container remove + cleanup"),
        (bench.trial.certify, "certify", "checks (step + invariant probes + final)"),
        (bench.trial.steps, "read_head", "git ops at step heads"),
        (bench.trial.steps, "apply_drift", "drift commits"),
        (WorkingCopy, "commit", "git commits"),
        (WorkingCopy, "tree_sha", "git tree_sha"),
        (Tools, "call", "tool calls (non-check)"),
        (EventLog, "append", "event log"),
        (EventLog, "context", "event log"),
        (bench.trial.record, "write_run_md", "RUN.md"),
    ]:
        ph.wrap(owner, attr, name)
    real_provider, real_strategy = bench.providers.make_provider, strategies.make_strategy
    bench.providers.make_provider = lambda cfg: _TimedProvider(real_provider(cfg), ph)  # type: ignore[assignment]
    strategies.make_strategy = lambda cfg: _TimedStrategy(real_strategy(cfg), ph)  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        with ph.phase("harness (other)"):
            result = bench.trial.runner.run(tcfg)
        wall = time.perf_counter() - t0
    finally:
        ph.restore()
        bench.providers.make_provider, strategies.make_strategy = real_provider, real_strategy  # type: ignore[assignment]
    log = Log.from_path(result.events_path, strict=True)
    checks = log.of(ev.Check)
    check_s = sum(c.t["duration_s"] for c in checks)
    container_s = ph.self_s["container start"]
    mlflow_s = sum(
        sum(ph.samples[k])
        for k in (  # inclusive: finish() contains the artifact upload
            "mlflow: resume check",
            "mlflow: run create + params",
            "mlflow: metrics + tags",
        )
    )
    phases = {k: round(v, 4) for k, v in sorted(ph.self_s.items(), key=lambda kv: -kv[1])}
    return {
        "overrides": overrides,
        "status": result.status,
        "turns": result.turns,
        "wall_s": round(wall, 3),
        "steps": len(log.of(ev.StepStart)),
        "checks": len(checks),
        "check_s": round(check_s, 3),
        "container_start_s": round(container_s, 3),
        "trial_overhead_ratio": round(wall / (container_s + check_s), 3),
        "mlflow_log_s": round(mlflow_s, 3),
        "mlflow_store_init_s": round(store_init, 3),
        "mlflow_store_open_s": mlflow_store_open_s(tcfg.tracking.uri),
        "context_build_ms": [round(x * 1000, 3) for x in ph.samples["context build"]],
        "phases_s": phases,
        "phase_calls": dict(ph.calls),
    }


def mlflow_store_open_s(uri: str) -> float:
    """A new process opening an existing store (what every worker pays once), imports excluded."""
    code = (
        "import time, mlflow.tracking, mlflow.entities\n"
        "t = time.perf_counter()\n"
        "from bench.tracking.runs import _client\n"
        f"_client({uri!r}).get_experiment_by_name('ctxbench')\n"
        "print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True)
    return round(float(out.stdout.strip().splitlines()[-1]), 3)
