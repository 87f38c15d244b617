"""When a study's trials start, phase by phase (bench/perf/inflight.py reports it): what spreads
the starts of many trials in flight, the harness's job setup and claim, or the sandboxes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctxlog import events as ev
from ctxlog.reader import Log


def start_phases(results: Path, study: str, recs: list[dict[str, Any]]) -> dict[str, Any]:
    """What spreads the trials' starts: per trial, the job's start (Hydra's on_job_start, from
    progress.jsonl), its MLflow run's creation (the claim: resume check under the host-wide lock),
    the `trial_start` event (its sandbox up: a container started or renewed) and its first model
    call. For each phase, its duration (median, max) and when the phase's end fell (spread from
    the first trial's job start)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{results}/mlflow.db")
    exp = client.get_experiment_by_name("ctxbench")
    if exp is None:
        return {}
    job = {r["run_id"]: r["ts"] - r["wall_s"] for r in recs if r.get("run_id")}
    raw: list[tuple[float, float, float | None, float | None]] = []
    for r in client.search_runs(
        [exp.experiment_id],
        max_results=50000,
        filter_string=(f"tags.study = '{study}' and tags.`ctxbench.kind` = 'trial'"),
    ):
        h = r.data.tags["config_hash"]
        logs = list((results / "trials").glob(f"{h}-*/events.jsonl"))
        if r.info.run_id not in job or len(logs) != 1:
            continue
        first: dict[str, float | None] = {}
        log = Log.from_path(logs[0])
        for cls in (ev.TrialStart, ev.ModelCall):
            e = log.first(cls)
            first[cls.kind] = e.t.get("ts") if e is not None else None
        raw.append(
            (job[r.info.run_id], r.info.start_time / 1000, first.get("trial_start"), first.get("model_call"))
        )
    rows: list[tuple[float, ...]] = [x for x in raw if None not in x]  # type: ignore[misc]
    if not rows:
        return {}
    t0 = min(x[0] for x in rows)
    out: dict[str, Any] = {"trials": len(rows)}
    for i, name in enumerate(
        (
            "claim (job start to run created)",
            "sandbox (run created to trial_start)",
            "first call (trial_start to its first reply)",
        ),
        1,
    ):
        d = sorted(x[i] - x[i - 1] for x in rows)
        ends = [x[i] - t0 for x in rows]
        out[name] = {
            "median_s": round(d[len(d) // 2], 2),
            "max_s": round(d[-1], 2),
            "ends_from_s": round(min(ends), 1),
            "ends_to_s": round(max(ends), 1),
        }
    out["job starts spread_s"] = round(max(x[0] for x in rows) - t0, 1)
    return out
