"""Loading a study the harness wrote: its MLflow schema becomes tidy frames."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest

from analysis import load_runs
from analysis.load import runs as load


def test_trials_are_the_finished_deduplicated_runs(study, runs):
    t = runs.trials
    assert len(t) == study.finished
    assert set(t["strategy"]) == set(study.strategies) and set(t["arm"]) == set(study.arms)
    assert not t.duplicated(list(load.IDENTITY)).any()
    assert (t["mlflow_status"] == "FINISHED").all()
    assert t["task_seed"].dtype == "Int64" and t["rep"].dtype == "Int64"
    assert t["success"].isin([0, 1]).all()
    assert t["param.strategy.name"].eq(t["strategy"]).all()
    assert (t["parent_run_id"] == study.parent_run_id).all()
    # Design order, not alphabetical.
    assert list(dict.fromkeys(t["strategy"])) == list(study.strategies)
    assert len(t.groupby(["task_seed", "rep"])) == study.seeds * study.reps


def test_excluded_trials_are_counted_with_reasons(study, runs):
    ex = runs.excluded
    assert len(ex) == study.excluded
    assert sorted(ex["excluded_because"]) == ["duplicate (older run)", "mlflow_status=FAILED"]
    assert "provider_error" in set(ex["failure_reason"])
    dup = ex[ex["excluded_because"].str.startswith("duplicate")].iloc[0]
    kept = runs.trials.query("strategy == 'raw' and arm == 'baseline' and task_seed == 0 and rep == 0")
    assert len(kept) == 1 and dup["start_time"] < kept["start_time"].iloc[0]


def test_curves_one_row_per_turn_and_final_latency_is_the_total(runs):
    c, t = runs.curves, runs.trials.set_index("run_id")
    assert len(c) == t["turns"].sum()
    assert (c["turn"] < c["run_id"].map(t["turns"])).all()
    per_run = c.groupby("run_id")["turn_latency_s"].sum()
    total, compacted = t.loc[per_run.index, "latency_s"], t.loc[per_run.index, "compactions"] > 0
    # The trial's latency is its turns' plus its summariser calls', which are not turns.
    assert total[~compacted].to_numpy() == pytest.approx(per_run[~compacted].to_numpy())
    assert (total[compacted] > per_run[compacted]).all() and compacted.any()
    assert c["cache_hit_ratio"].between(0, 1).all()
    assert {"prompt_tokens", "cumulative_tokens", "ttft_s", "strategy", "arm", "task_seed"} <= set(c.columns)


def test_study_filter_and_all_studies(study):
    other = load_runs(study.uri, study.experiment, "other", curves=False)
    assert len(other.trials) == 2 and other.curves.empty and other.excluded.empty
    # A trial past its wall-clock limit is the agent's failure: counted, never excluded.
    late = other.trials.set_index("arm").loc["drift_compaction"]
    assert (late["success"], late["failure_reason"]) == (0, "timeout")
    both = load_runs(study.uri, study.experiment, curves=False)
    assert len(both.trials) == study.finished + len(other.trials)
    assert set(both.studies["study"]) == {"demo", "other", "broken"}
    broken = load_runs(study.uri, study.experiment, "broken")
    assert broken.empty and len(broken.excluded) == 1


def test_missing_experiment_and_study(study):
    assert load_runs(study.uri, "nope").empty
    res = load_runs(study.uri, study.experiment, "no-such-study")
    assert res.empty and "no trials" in res.notes[0]


def test_history_fallback_matches_bulk(study, runs):
    from mlflow import MlflowClient

    class PublicOnly:  # a client whose store has no bulk query (e.g. a REST server)
        def __init__(self, client):
            self.get_metric_history = client.get_metric_history

    ids = list(runs.trials["run_id"][:3])
    client = MlflowClient(tracking_uri=study.uri)
    bulk = load._histories(client, ids, ["prompt_tokens", "ttft_s"])
    slow = load._histories(PublicOnly(client), ids, ["prompt_tokens", "ttft_s"])
    key = ["run_id", "key", "step"]
    pd.testing.assert_frame_equal(
        bulk.sort_values(key).reset_index(drop=True), slow.sort_values(key).reset_index(drop=True)
    )


def test_analysis_never_imports_the_harness():
    root = Path(load.__file__).parents[1]  # analysis/, every room
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert name.split(".")[0] not in {"bench", "tasks", "strategies"}, (
                    f"{path.name} imports {name}"
                )


def test_trials_at_two_sensitivity_points_are_two_trials_not_a_duplicate(tmp_path):
    """A sensitivity study runs one cell (strategy, arm, task, seed, rep) at several points of the
    sim's parameters. The loader's identity must keep one trial per point -- collapsing them would
    keep whichever point ran last -- while a true rerun at one point still supersedes the older
    run, and pairs never join trials of two points."""
    from mlflow import MlflowClient

    from analysis.load import accounting
    from analysis.measures import tables
    from bench.tracking.study_records import merge

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.create_experiment("ctxbench", artifact_location=(tmp_path / "artifacts").as_uri())
    parent = client.create_run(exp, start_time=1, tags={"ctxbench.kind": "study", "study": "sens"})
    cells = [(s, p) for s in ("raw", "ledger") for p in ("base", "tempt_low")]
    ident = {
        "arm": "compaction",
        "task_family": "signature_migration",
        "task_seed": 0,
        "rep": 0,
        "model": "sim",
    }
    entries = [
        {
            "job": i,
            "overrides": [f"strategy={s}", f"+sensitivity={p}"],
            "config_hash": f"h-{s}-{p}",
            "strategy": s,
            "sensitivity_point": p,
            **ident,
        }
        for i, (s, p) in enumerate(cells)
    ]
    plan, _ = merge(None, "sens", {"argv": [], "overrides": []}, entries)
    client.log_dict(parent.info.run_id, plan, "plan.json")
    # (strategy, point, success) in start order; raw at base ran twice (a rerun: the newer counts).
    for t, (s, p, ok) in enumerate(
        [
            ("raw", "base", 0),
            ("raw", "base", 1),
            ("raw", "tempt_low", 0),
            ("ledger", "base", 1),
            ("ledger", "tempt_low", 0),
        ],
        start=10,
    ):
        tags = {
            "ctxbench.kind": "trial",
            "study": "sens",
            "strategy": s,
            "config_hash": f"h-{s}-{p}",
            "status": "success" if ok else "failure",
            "mlflow.parentRunId": parent.info.run_id,
            **{k: str(v) for k, v in ident.items()},
        }
        run = client.create_run(exp, start_time=t, tags=tags)
        client.log_param(run.info.run_id, "sensitivity.point", p)
        client.log_metric(run.info.run_id, "success", ok)
        client.set_terminated(run.info.run_id, status="FINISHED")

    runs = load_runs(f"sqlite:///{tmp_path}/mlflow.db", study="sens", curves=False)
    t = runs.trials.set_index(["strategy", load.POINT])
    assert sorted(t.index) == sorted(cells)  # both points of each cell kept
    assert t.loc[("raw", "base"), "success"] == 1  # the rerun superseded the older run at its point
    assert runs.excluded["excluded_because"].tolist() == ["duplicate (older run)"]
    pairs = tables._paired(runs.trials, "raw", "success").set_index(load.POINT)
    assert (
        len(pairs) == 2
        and pairs.loc["base", "success_ref"] == 1
        and pairs.loc["tempt_low", "success_ref"] == 0
    )
    acc = accounting.planned_trials(runs)
    assert acc["state"].eq("finished").all() and sorted(acc[load.POINT]) == sorted(p for _, p in cells)
    assert accounting.dropped_pairs(acc, "raw")["n_pairs_planned"].tolist() == [2]


def test_an_ablation_switch_is_a_point_too():
    """experiment=ablation runs each cell once per switch: like sensitivity points, the switches
    must neither collapse into one trial nor pair with each other."""
    frame = pd.DataFrame(
        {
            "param.ablation": ["none", "temptation", None, None],
            "param.sensitivity.point": [None, None, "tempt_low", None],
        }
    )
    assert load._point(frame).tolist() == ["ablation=none", "ablation=temptation", "tempt_low", ""]
    assert load._point(pd.DataFrame(index=range(2))).tolist() == ["", ""]  # neither param logged
