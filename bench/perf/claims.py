"""Where a trial's start goes when many start at once: `runner.claim` timed phase by phase.

`n` threads of one process (as hydra/launcher=ctxbench_threads runs them) each claim a
distinct trial of one study against one tracking store (the SQLite file, or a tracking server's
URI), all released at the same instant. Per claim: the wait for the claim's lock, the resume
check (`previous_runs`), the run's creation (`TrialRun`), its params and task input (after the
lock), and the claim's whole time. Prints the median and max of each, and the wall.

    python -m bench.perf.claims --n 128 [--uri http://127.0.0.1:5000] [--one-lock]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def _timed(store: dict[str, float], key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(*a: Any, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            store[key] = store.get(key, 0.0) + time.perf_counter() - t

    return call


def measure(
    n: int, results: Path, uri: str | None = None, one_lock: bool = False, wal: bool = False
) -> dict[str, Any]:
    """`one_lock`: every claim takes the same lock, as one host-wide lock did before. `wal`: the
    SQLite store in WAL mode with synchronous=NORMAL (a commit without an fsync), to show what
    share of a claim is the store's fsyncs."""
    if wal:
        _wal()
    import tasks
    from bench.config import compose, load
    from bench.tracking import study_budget as budget
    from bench.trial import runner

    study = f"claims-{uuid.uuid4().hex[:6]}"
    uri = uri or f"sqlite:///{results / 'mlflow.db'}"
    base = [
        f"tracking.uri={uri}",
        f"results_dir={results}",
        f"tracking.artifact_root={results / 'artifacts'}",
        f"study.name={study}",
        "sandbox=local",
        "model=sim",
    ]
    cfgs = [load(compose([*base, f"task.seed={i}"])) for i in range(n)]
    per: dict[str, dict[str, float]] = {}  # thread name: phase -> seconds
    local = threading.local()
    real_lock, real_prev, real_run = runner.trial_claim, runner.previous_runs, runner.TrialRun

    @contextlib.contextmanager
    def lock(*a: Any, **kw: Any) -> Iterator[None]:
        t = time.perf_counter()
        with real_lock(a[0], "one-lock") if one_lock else real_lock(*a, **kw):
            local.times["lock wait"] = local.times.get("lock wait", 0.0) + time.perf_counter() - t
            yield

    def one(tcfg: Any) -> None:
        local.times = per.setdefault(threading.current_thread().name, {})
        gate = budget.Gate.for_trial({}, tcfg.results_dir, tcfg.study)
        go.wait()
        t = time.perf_counter()
        run = runner.claim(tcfg, tasks.generate(tcfg.task.family, tcfg.task.seed), gate)
        local.times["claim"] = time.perf_counter() - t
        assert isinstance(run, real_run), run
        run.client.set_terminated(run.run_id, status="FINISHED")

    runner.trial_claim = lock  # type: ignore[assignment]
    runner.previous_runs = lambda c: _timed(local.times, "resume check", real_prev)(c)  # type: ignore[assignment]

    class Timed(real_run):  # type: ignore[misc,valid-type]
        def __init__(self, *a: Any, **kw: Any) -> None:
            _timed(local.times, "create run", super().__init__)(*a, **kw)

        def log_params(self) -> None:
            _timed(local.times, "params", super().log_params)()

    runner.TrialRun = Timed  # type: ignore[misc]
    # One claim first, alone: the experiment, the study's parent run and this process's MLflow
    # imports exist before the measured ones, as in a study after its first trial.
    go = threading.Event()
    go.set()
    one(load(compose([*base, f"task.seed={n}"])))
    go.clear()
    per.clear()
    try:
        threads = [threading.Thread(target=one, args=(c,), name=f"claim-{i}") for i, c in enumerate(cfgs)]
        for th in threads:
            th.start()
        t0 = time.perf_counter()
        go.set()
        for th in threads:
            th.join()
        wall = time.perf_counter() - t0
    finally:
        runner.trial_claim, runner.previous_runs, runner.TrialRun = real_lock, real_prev, real_run  # type: ignore[misc]
    out: dict[str, Any] = {
        "n": n,
        "store": uri.split(":")[0],
        "one_lock": one_lock,
        "wal": wal,
        "wall_s": round(wall, 2),
        "claimed": len(per),
    }
    for key in ("lock wait", "resume check", "create run", "params", "claim"):
        d = sorted(t.get(key, 0.0) for t in per.values())
        out[key] = {"median_s": round(d[len(d) // 2], 3), "max_s": round(d[-1], 3), "sum_s": round(sum(d), 1)}
    return out


def _wal() -> None:
    import sqlite3

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _pragmas(conn: Any, _record: Any) -> None:
        if isinstance(conn, sqlite3.Connection):
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.perf.claims", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--n", type=int, default=128)
    p.add_argument("--uri", default=None, help="a tracking server's URI; default: a fresh SQLite store")
    p.add_argument(
        "--one-lock", action="store_true", help="one lock for every claim (the old host-wide lock)"
    )
    p.add_argument(
        "--wal", action="store_true", help="SQLite in WAL mode, synchronous=NORMAL (what fsyncs cost)"
    )
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ctxbench-claims-") as tmp:
        print(json.dumps(measure(a.n, Path(tmp), a.uri, a.one_lock, a.wal), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
