"""Every planned trial counted (analysis.load.accounting): a study whose plan (plan.json in its
parent run, as the study callback writes it) names trials that finished, failed in the
infrastructure, were interrupted, are still running or never ran, plus one finished trial
the plan does not name. The known answers are worked out by hand in the comments."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.load import accounting, load_runs
from analysis.measures import tables
from bench.tracking.study_records import merge

STUDY = "acct"
# (strategy, arm, seed): runs in start order, each (MLflow status, status tag, failure_reason, success)
RUNS = {
    ("raw", "baseline", 0): [("FINISHED", "success", "", 1)],
    ("raw", "baseline", 1): [("FAILED", "error", "provider_error", 0)],
    ("raw", "baseline", 2): [],  # never ran: missing
    ("raw", "baseline", 3): [("FINISHED", "failure", "step_failed", 0)],
    ("ledger", "baseline", 0): [("FINISHED", "failure", "step_failed", 0)],
    ("ledger", "baseline", 1): [
        ("KILLED", "killed", "interrupted", 0),
        ("FINISHED", "success", "", 1),
    ],  # rerun
    ("ledger", "baseline", 2): [("FINISHED", "success", "", 1)],
    ("ledger", "baseline", 3): [("RUNNING", "running", "", 0)],
    ("ledger", "baseline", 4): [("FINISHED", "success", "", 1)],  # not in the plan: unplanned
    ("raw", "drift", 0): [("FAILED", "error", "sandbox_lost", 0)],  # drift: no pair left
    ("ledger", "drift", 0): [("FINISHED", "success", "", 1)],
}
PLANNED = [k for k in RUNS if k != ("ledger", "baseline", 4)]


def _hash(strategy: str, arm: str, seed: int) -> str:
    return f"h-{strategy}-{arm}-{seed}"


def _tags(strategy: str, arm: str, seed: int, study: str = STUDY) -> dict[str, str]:
    # The tags bench/tracking/runs.py TrialRun writes.
    return {
        "ctxbench.kind": "trial",
        "study": study,
        "strategy": strategy,
        "arm": arm,
        "task_family": "signature_migration",
        "task_seed": str(seed),
        "rep": "0",
        "model": "sim",
        "config_hash": _hash(strategy, arm, seed),
    }


def _metrics(client, run_id: str, success: int) -> None:
    from mlflow.entities import Metric

    final = {
        "success": success,
        "turns": 2,
        "tokens_input_total": 300,
        "cost_usd": 0.0,
        "latency_s": 1.0,
        "cache_hit_ratio": 0.5,
    }
    curve = (
        "prompt_tokens",
        "cached_tokens",
        "output_tokens",
        "context_tokens",
        "cumulative_tokens",
        "turn_latency_s",
        "ttft_s",
    )
    client.log_batch(
        run_id,
        metrics=[Metric(k, v, 0, 0) for k, v in final.items()]
        + [Metric(k, 100.0, 0, turn) for k in curve for turn in (0, 1)],
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from mlflow import MlflowClient

    root = tmp_path_factory.mktemp("acct")
    uri = f"sqlite:///{root}/mlflow.db"
    client = MlflowClient(uri)
    exp = client.create_experiment("ctxbench", artifact_location=(root / "artifacts").as_uri())
    parent = client.create_run(exp, start_time=1, tags={"ctxbench.kind": "study", "study": STUDY})
    entries = [
        {
            "job": i,
            "overrides": [f"strategy={s}", f"arm={a}", f"task.seed={n}"],
            "config_hash": _hash(s, a, n),
            "strategy": s,
            "arm": a,
            "task_family": "signature_migration",
            "task_seed": n,
            "rep": 0,
            "model": "sim",
        }
        for i, (s, a, n) in enumerate(PLANNED)
    ]
    plan, _ = merge(None, STUDY, {"argv": ["-m", "..."], "overrides": ["strategy=raw,ledger"]}, entries)
    client.log_dict(parent.info.run_id, plan, "plan.json")
    t = 10
    for (strategy, arm, seed), runs in RUNS.items():
        for status, tag, reason, success in runs:
            t += 1
            run = client.create_run(
                exp,
                start_time=t,
                tags={
                    **_tags(strategy, arm, seed),
                    "status": tag,
                    "failure_reason": reason,
                    "mlflow.parentRunId": parent.info.run_id,
                },
            )
            _metrics(client, run.info.run_id, success)
            if status != "RUNNING":
                client.set_terminated(run.info.run_id, status=status)
    # An older study without a plan: what ran is what was planned.
    old = client.create_run(
        exp, start_time=t + 1, tags={**_tags("raw", "baseline", 0, "old"), "status": "success"}
    )
    _metrics(client, old.info.run_id, 1)
    client.set_terminated(old.info.run_id, status="FINISHED")
    client.create_run(exp, start_time=0, tags={"ctxbench.kind": "study", "study": "old"})
    return uri


def test_each_planned_trial_is_finished_excluded_or_missing(store):
    runs = load_runs(store, study=STUDY, curves=False)
    acc = accounting.planned_trials(runs).set_index(["strategy", "arm", "task_seed"])
    assert acc.loc[("raw", "baseline", 1), ["state", "reason"]].tolist() == ["excluded", "provider_error"]
    assert acc.loc[("raw", "baseline", 2), ["state", "reason"]].tolist() == ["missing", ""]
    assert acc.loc[("ledger", "baseline", 1), ["state", "success"]].tolist() == ["finished", 1]  # rerun, once
    assert acc.loc[("ledger", "baseline", 3), ["state", "reason"]].tolist() == ["excluded", "running"]
    assert acc.loc[("ledger", "baseline", 4), "planned_by"] == "unplanned"
    assert (acc["planned_by"] == "plan").sum() == len(PLANNED)


def test_the_headline_counts_per_protocol_and_by_intention_to_treat(store):
    runs = load_runs(store, study=STUDY, curves=False)
    s = tables.success_table(runs.trials, accounting.planned_trials(runs)).set_index(["strategy", "arm"])
    # raw: planned s0-s3; finished s0 (success), s3; excluded s1; missing s2.
    raw = s.loc[("raw", "baseline")]
    assert (raw.planned, raw.unplanned, raw.finished, raw.excluded, raw.missing) == (4, 0, 2, 1, 1)
    assert raw.excluded_by_reason == "provider_error 1"
    assert (raw.successes, raw.n, raw.itt_successes, raw.itt_n) == (1, 2, 1, 4)
    assert raw.rate == 0.5 and raw.itt_rate == 0.25 and raw.itt_ci_hi < raw.ci_hi
    # ledger: planned s0-s3 (+ s4 unplanned); finished s0 (failure), s1, s2, s4 (successes); s3 running.
    led = s.loc[("ledger", "baseline")]
    assert (led.planned, led.unplanned, led.finished, led.excluded, led.missing) == (4, 1, 4, 1, 0)
    assert (led.successes, led.n, led.itt_successes, led.itt_n) == (3, 4, 3, 5)
    assert led.excluded_by_reason == "running 1"


def test_paired_tests_state_the_pairs_dropped_and_why(store):
    runs = load_runs(store, study=STUDY, curves=False)
    v = tables.success_vs_reference(runs.trials, "raw", planned=accounting.planned_trials(runs))
    row, drift = v.itertuples()
    # Twins s0-s3 (s4 has none): s0 both finished; s1 raw excluded; s3 ledger excluded; s2 raw missing.
    assert (row.n_pairs_planned, row.n_pairs, row.pairs_dropped_excluded, row.pairs_dropped_missing) == (
        4,
        1,
        2,
        1,
    )
    assert (row.b, row.c) == (0, 1)
    # drift: its one pair lost its reference twin to the infrastructure; the comparison still says so.
    assert (drift.arm, drift.n_pairs_planned, drift.n_pairs, drift.pairs_dropped_excluded) == (
        "drift",
        1,
        0,
        1,
    )


def test_a_study_without_a_plan_counts_what_ran_and_says_so(store):
    runs = load_runs(store, curves=False)  # both studies
    acc = accounting.planned_trials(runs)
    old = acc[acc["study"] == "old"]
    assert old["planned_by"].tolist() == ["ran"] and old["state"].tolist() == ["finished"]
    notes = accounting.notes(acc)
    assert any("'old' has no plan" in n for n in notes) and not any(
        f"'{STUDY}' has no plan" in n for n in notes
    )
    assert any("1 finished trial(s) not in their study's plan" in n for n in notes)
    assert any("1 planned trial(s) have only a RUNNING run" in n for n in notes)


def test_the_outcome_class_tag_wins_over_the_mlflow_status_when_present():
    runs = pd.DataFrame(
        {
            "mlflow_status": ["FINISHED", "FINISHED", "FAILED", "KILLED", "RUNNING", "FINISHED"],
            "success": [1, 0, 0, 0, 0, 0],
            "outcome_class": [None, "", None, None, None, "infrastructure_failure"],
        }
    )
    assert accounting.outcome_class(runs).tolist() == [
        "success",
        "agent_failure",
        "infrastructure_failure",
        "interrupted",
        "running",
        "infrastructure_failure",
    ]


def test_the_report_shows_the_accounting(store, tmp_path):
    from analysis.report.build import generate

    rep = generate(store, study=STUDY, out_dir=tmp_path / "report", log_mlflow=False)
    assert rep is not None
    md = (rep.out_dir / "index.md").read_text()
    assert "| strategy | arm | planned | unplanned | finished | excluded (why) | missing |" in md
    assert "| raw | baseline | 4 | 0 | 2 | 1 (provider_error 1) | 1 | 0.50 [" in md
    assert "(n=2) | 0.25 [" in md and "(n=4) |" in md
    assert "| 1 | 2 / 1 (of 4) |" in md  # n pairs | dropped: excluded / missing
    assert "No pair left for `ledger` in `drift`: 1 planned, 1 dropped (excluded), 0 dropped (missing)." in md
    assert "Of **10 planned trials** (+1 unplanned): 7 finished, 3 excluded, 1 missing" in md
    planned = pd.read_csv(rep.out_dir / "tables" / "planned_trials.csv")
    assert len(planned) == 11 and set(planned["state"]) == {"finished", "excluded", "missing"}
