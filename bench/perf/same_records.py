"""Did a change to the harness keep every trial's record? Two results dirs of the same study plan
(before and after the change), compared trial by trial, keyed by config hash: the MLflow run's
status, metrics (all but timings), params, tags (all but the process's and the run's own),
per-turn metric histories, and the event log (`comparable`: all but its timings).

    python -m bench.perf.same_records RESULTS_BEFORE RESULTS_AFTER

Also the reference path against the accelerated one (docs/scaling.md §9): the annexes' switches
(`sandbox.check_cache`, `sandbox.reuse`, `sandbox.fast_git`, `task.kept`) are recorded as params but are not
the trial's result, so they are left out of the params compared.

The check cache's hits are a race between workers, so they are not compared (`_events`).
Trials not FINISHED on either side (a run stopped midway) are left out, and said so.
Prints how many trials each side has, how many are equal, and the first differences; exit 1 on
any difference or a trial on one side only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.config import TASK_ANNEX_SWITCHES
from bench.eventlog.writer import comparable
from bench.sandbox.base import ANNEX_SWITCHES
from ctxlog import events as ev

TIMINGS = {
    "latency_s",
    "ttft_s",
    "turn_latency_s",
    "wall_s",
    "queue_ms",
}  # of the run, not the trial's result
VOLATILE_TAGS = {"pid", "pid_start", "host", "mlflow.parentRunId", "events_sha256", "mlflow.runName", "study"}
HISTORIES = ("prompt_tokens", "output_tokens", "cached_tokens")
NOT_COMPARED_PARAMS = {  # where, and how fast
    "study.name",
    *(f"sandbox.{k}" for k in ANNEX_SWITCHES),
    *(f"task.{k}" for k in TASK_ANNEX_SWITCHES),
}


def records(results: Path) -> dict[str, dict[str, Any]]:
    """Every trial run of the store under `results`, by config hash."""
    spellings = sorted({str(results), str(results.resolve())}, key=len, reverse=True)
    results = results.resolve()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{results}/mlflow.db")
    exp = client.get_experiment_by_name("ctxbench")
    assert exp is not None, f"no ctxbench experiment in {results}/mlflow.db"
    out: dict[str, dict[str, Any]] = {}
    runs = client.search_runs(
        [exp.experiment_id], filter_string="tags.`ctxbench.kind` = 'trial'", max_results=50000
    )
    for r in runs:
        h = r.data.tags["config_hash"]
        (path,) = list((results / "trials").glob(f"{h}-*/events.jsonl"))
        out[h] = {
            "status": r.info.status,
            "metrics": {
                k: v
                for k, v in r.data.metrics.items()
                if k not in TIMINGS and not k.endswith("_s") and not k.startswith("sandbox_cpu")
            },
            "params": {
                k: _placed(v, spellings) for k, v in r.data.params.items() if k not in NOT_COMPARED_PARAMS
            },
            "tags": {k: v for k, v in r.data.tags.items() if k not in VOLATILE_TAGS and k != "git_sha"},
            "history": {k: [m.value for m in client.get_metric_history(r.info.run_id, k)] for k in HISTORIES},
            "events": _events(path),
        }
    return out


def _placed(value: str, spellings: list[str]) -> str:
    for s in spellings:  # the longest first: the absolute path contains the relative one
        value = value.replace(s, "<results>")
    return value


def _events(path: Path) -> list[dict[str, Any]]:
    """The event log without timings and, since which worker checks a state first is a race
    between workers, without `check_cached` events (their key covers the harness's sources and
    their origin names another run) or the sequence numbers they shift: the `check` event after
    one is the verdict, compared as any other."""
    records = comparable([json.loads(x) for x in path.read_text().splitlines()])
    return [
        {k: v for k, v in r.items() if k != "seq"}
        for r in records
        if not isinstance(ev.parse(r), ev.CheckCached)
    ]


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The parts of two records that differ, named down to the key."""
    out = []
    for part in a.keys() | b.keys():
        x, y = a.get(part), b.get(part)
        if x == y:
            continue
        if isinstance(x, dict) and isinstance(y, dict):
            out += [
                f"{part}.{k}: {x.get(k)!r} != {y.get(k)!r}"[:300]
                for k in sorted(x.keys() | y.keys())
                if x.get(k) != y.get(k)
            ]
        elif isinstance(x, list) and isinstance(y, list):
            first = next(
                (i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y))
            )
            out.append(
                f"{part}[{first}] of {len(x)}/{len(y)}: "
                f"{(x[first : first + 1] or [None])[0]!r} != {(y[first : first + 1] or [None])[0]!r}"[:600]
            )
        else:
            out.append(f"{part}: {x!r} != {y!r}"[:300])
    return out


def main(argv: list[str] | None = None) -> int:
    before, after = (Path(p) for p in (argv if argv is not None else sys.argv[1:]))
    a, b = records(before), records(after)
    unfinished = {h for side in (a, b) for h, r in side.items() if r["status"] != "FINISHED"}
    if unfinished:  # a run stopped midway (RUNNING, KILLED) is compared with nothing
        print(f"{len(unfinished)} trial(s) not finished on a side, left out")
        a, b = ({h: r for h, r in side.items() if h not in unfinished} for side in (a, b))
    equal = sum(1 for h in a.keys() & b.keys() if a[h] == b[h])
    statuses = sorted({(r["tags"].get("status"), r["status"]) for r in a.values()})
    print(f"before {len(a)} trials, after {len(b)}, on both {len(a.keys() & b.keys())}, equal {equal}")
    print(
        "statuses before:",
        {s: sum(1 for r in a.values() if (r["tags"].get("status"), r["status"]) == s) for s in statuses},
    )
    only = sorted(a.keys() ^ b.keys())
    if only:
        print(f"{len(only)} on one side only, e.g. {only[:3]}")
    bad = 0
    for h in sorted(a.keys() & b.keys()):
        if a[h] != b[h]:
            bad += 1
            if bad <= 10:
                print(
                    f"{h} ({a[h]['tags'].get('strategy')}/{a[h]['tags'].get('arm')}/"
                    f"{a[h]['tags'].get('task_family')}#{a[h]['tags'].get('task_seed')}):"
                )
                print("  " + "\n  ".join(diff(a[h], b[h])[:8]))
    return 1 if bad or only else 0


if __name__ == "__main__":
    raise SystemExit(main())
