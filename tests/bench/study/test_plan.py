"""The study's plan (bench.study.plan, bench.tracking.study_records) and the callback's two
modes: inert in a single run, reading the trial's result from the job's return value in a
multirun. Host only; the real multirun of a plain sweep is in test_plain_multirun.py."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.utils import JobReturn, JobStatus
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict, read_write

from bench.config import CONF_DIR, compose, load
from bench.study.callback import StudyCallback
from bench.study.plan import derived_name, plan_trials
from bench.study.progress import planned_jobs
from bench.tracking.study_records import merge, open_study_run, read_plan, status
from bench.trial.runner import TrialResult


def _multirun_config(overrides: list[str]):
    """What `python -m bench -m OVERRIDES` composes before the callback's multirun start."""
    return GlobalHydra.instance().hydra.compose_config("config", overrides, run_mode=RunMode.MULTIRUN)


def _full_hash(master, job: list[str]) -> str:
    """A job's config hash the slow, sure way: Hydra composes the job from scratch, as the launcher does."""
    cfg = GlobalHydra.instance().config_loader().load_sweep_config(master, list(job))
    with read_write(cfg), open_dict(cfg):
        del cfg["hydra"]
    return load(cfg).config_hash


def test_plan_hashes_are_the_hashes_of_a_full_compose_of_each_job():
    sweep = [
        "experiment=grid",
        "task=config_rename,signature_migration",
        "task.seed=0,3",
        "rep=0,1",
        "++task.size.steps=6",
        "limits.max_turns=100,200",
        "model=sim,oracle",
    ]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        master = _multirun_config(sweep)
        jobs = planned_jobs(master) or []
        assert len(jobs) == 4 * 4 * 2 * 2 * 2 * 2 * 2
        entries = plan_trials(master, jobs)
        sample = list(range(0, len(jobs), 37)) + [len(jobs) - 1]
        for i in sample:
            assert entries[i]["config_hash"] == _full_hash(master, jobs[i]), jobs[i]
    assert len({e["config_hash"] for e in entries}) == len(jobs)  # every job a different trial
    first = entries[0]
    assert (
        first["strategy"],
        first["arm"],
        first["task_family"],
        first["task_seed"],
        first["rep"],
        first["model"],
    ) == ("raw", "baseline", "config_rename", 0, 0, "sim")


def test_a_job_that_will_crash_is_planned_with_its_error_and_the_others_are_hashed():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        master = _multirun_config(["strategy=raw", "task.seed=-1,2"])
        entries = plan_trials(master, planned_jobs(master) or [])
        ok = _full_hash(master, ["strategy=raw", "task.seed=2"])
    bad, good = entries
    assert (
        bad["config_hash"] is None
        and "task.seed: Input should be greater than or equal to 0, got -1" in bad["error"]
    )
    assert good["config_hash"] == ok


def test_the_grid_is_planned_without_composing_each_job():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        master = _multirun_config(["experiment=grid"])
        jobs = planned_jobs(master) or []
        t0 = time.monotonic()
        entries = plan_trials(master, jobs)
        seconds = time.monotonic() - t0
    assert len(entries) == 480 and all(e["config_hash"] for e in entries)
    assert len({e["config_hash"] for e in entries}) == 480
    print(f"\n480 grid jobs planned in {seconds:.1f}s")  # `make bench`-style figure, not a timed test


def test_a_plain_multirun_is_named_after_the_set_of_trials_it_plans():
    a = derived_name([["strategy=raw", "task.seed=0"], ["strategy=ledger", "task.seed=0"]])
    same = derived_name([["task.seed=0", "strategy=ledger"], ["task.seed=0", "strategy=raw"]])
    resumed = derived_name(
        [["strategy=raw", "task.seed=0", "resume=false"], ["strategy=ledger", "task.seed=0", "resume=false"]]
    )
    other = derived_name([["strategy=raw", "task.seed=0"]])
    assert a == same == resumed and a != other and a.startswith("adhoc-") and len(a) == len("adhoc-") + 8
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        ranged = planned_jobs(_multirun_config(["strategy=raw", "task.seed=range(0,2)"])) or []
        listed = planned_jobs(_multirun_config(["task.seed=1,0", "strategy=raw"])) or []
    assert derived_name(ranged) == derived_name(listed)


def _entry(h: str, seed: int = 0, strategy: str = "raw") -> dict:
    return {
        "job": 0,
        "overrides": [f"strategy={strategy}", f"task.seed={seed}"],
        "config_hash": h,
        "strategy": strategy,
        "arm": "baseline",
        "task_family": "signature_migration",
        "task_seed": seed,
        "rep": 0,
        "model": "sim",
    }


def test_resuming_with_the_same_sweep_reuses_the_plan_and_a_different_sweep_is_recorded_as_a_union():
    first, n1 = merge(None, "s", {"argv": ["a"]}, [_entry("h0"), _entry("h1", 1)])
    again, n2 = merge(first, "s", {"argv": ["a"]}, [_entry("h0"), _entry("h1", 1)])
    assert n1 == {
        "jobs": 2,
        "trials": 2,
        "new": 2,
        "already_planned": 0,
        "earlier_only": 0,
        "invalid": 0,
        "plan_size": 2,
    }
    assert n2["new"] == 0 and n2["plan_size"] == 2 and len(again["trials"]) == 2
    assert [t["invocations"] for t in again["trials"]] == [[0, 1], [0, 1]]
    sliced, n3 = merge(again, "s", {"argv": ["b"]}, [_entry("h1", 1), _entry("h2", 2), _entry("h2", 2)])
    assert (n3["jobs"], n3["trials"], n3["new"], n3["already_planned"], n3["earlier_only"]) == (3, 2, 1, 1, 1)
    assert [t["config_hash"] for t in sliced["trials"]] == ["h0", "h1", "h2"]  # the union: h0 stays planned
    assert [i["argv"] for i in sliced["invocations"]] == [["a"], ["a"], ["b"]]  # each invocation recorded
    bad, n4 = merge(
        sliced,
        "s",
        {},
        [{"job": 0, "overrides": ["task.seed=-1"], "config_hash": None, "error": "ConfigError: task.seed"}],
    )
    assert n4["invalid"] == 1 and bad["invalid"][0]["invocation"] == 3 and len(bad["trials"]) == 3
    assert first["trials"][0]["invocations"] == [0]  # merge never edits the plan it was given


def test_the_plan_lives_in_the_parent_run_and_a_different_sweep_warns(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    study = f"plan-{uuid.uuid4().hex[:6]}"
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        master = _multirun_config([f"study.name={study}", "strategy=raw,ledger"])
        jobs = planned_jobs(master) or []
        run_id = open_study_run(master, study, jobs, plan_trials(master, jobs))
        assert "sweep unlike" not in caplog.text
        wider = _multirun_config([f"study.name={study}", "strategy=raw,ledger,subagent"])
        wjobs = planned_jobs(wider) or []
        assert open_study_run(wider, study, wjobs, plan_trials(wider, wjobs)) == run_id
    assert "a sweep unlike the study's earlier ones: it plans 3 trial(s), 1 new" in caplog.text
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    plan = read_plan(client, run_id)
    assert plan is not None and [t["strategy"] for t in plan["trials"]] == ["raw", "ledger", "subagent"]
    assert client.get_run(run_id).data.tags["n_trials"] == "3"
    s = status(study, f"sqlite:///{tmp_path}/mlflow.db")
    assert s["plan"] == {
        "planned": 3,
        "finished": 0,
        "excluded": 0,
        "missing": 3,
        "unplanned_finished": 0,
        "invalid_jobs": 0,
        "invocations": 2,
    }


# ------------------------------------------------------------------------ the callback's hooks


def _failed_job() -> JobReturn:
    ret = JobReturn(overrides=["task.seed=7"], status=JobStatus.FAILED)
    ret.return_value = ValueError("task generation exploded for seed 7")
    return ret


def test_in_a_single_run_the_callback_stays_out_of_the_way(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cb = StudyCallback()  # a single run: Hydra never calls on_multirun_start
    cfg = OmegaConf.create({"hydra": {"job": {"num": 0}}})
    ret = _failed_job()
    cb.on_job_start(cfg)
    cb.on_job_end(cfg, job_return=ret)
    assert ret.status == JobStatus.FAILED  # the trial's exception still reaches the user
    assert "CTXBENCH_STUDY" not in os.environ and list(tmp_path.iterdir()) == []


def _multirun_callback(tmp_path: Path) -> StudyCallback:
    cb = StudyCallback()
    cb.study, cb.total, cb.started_wall = "t", 3, time.time()
    cb.progress_path = str(tmp_path / "progress.jsonl")
    return cb


def test_each_job_outcome_comes_from_the_return_value_of_its_trial(tmp_path, monkeypatch):
    monkeypatch.delenv("CTXBENCH_STUDY", raising=False)
    cb = _multirun_callback(tmp_path)
    cfg = OmegaConf.create({"hydra": {"job": {"num": 0}}})
    results = [
        TrialResult("r1", "failure", False, "step_failed", 12, Path("e")),
        TrialResult("r0", "success", True, "", 9, Path(""), skipped=True),
        TrialResult("r2", "error", False, "provider_error", 3, Path("e")),
    ]
    for result in results:
        ret = JobReturn(overrides=["strategy=raw"], status=JobStatus.COMPLETED)
        ret.return_value = result
        cb.on_job_start(cfg)
        assert os.environ["CTXBENCH_STUDY"] == "t"  # the job reads its study's name from it
        cb.on_job_end(cfg, job_return=ret)
    monkeypatch.delenv("CTXBENCH_STUDY")
    recs = [json.loads(x) for x in Path(cb.progress_path).read_text().splitlines()]  # type: ignore[arg-type]
    assert [(r["outcome"], r["run_id"], r["reason"]) for r in recs] == [
        ("failure", "r1", "step_failed"),
        ("skipped", "r0", ""),
        ("error", "r2", "provider_error"),
    ]


def test_a_sensitivity_sweep_plans_each_point_as_its_own_trial():
    """The points share every identity tag; the plan records the point so that the analysis can
    tell them apart (analysis/load/runs.py POINT), and a plain sweep plans no point."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        master = _multirun_config(["experiment=sensitivity", "strategy=raw", "arm=compaction", "task.seed=0"])
        entries = plan_trials(master, planned_jobs(master) or [])
        sweep = _multirun_config(["strategy=raw,ledger"])
        plain = plan_trials(sweep, planned_jobs(sweep) or [])
    points = [e["sensitivity_point"] for e in entries]
    assert len(points) == 9 and len(set(points)) == 9 and "base" in points
    assert len({e["config_hash"] for e in entries}) == 9
    plan, _ = merge(None, "sens", {"argv": [], "overrides": []}, entries)
    assert sorted(t["sensitivity_point"] for t in plan["trials"]) == sorted(points)
    assert {e["sensitivity_point"] for e in plain} == {""}


def test_an_ablation_sweep_plans_each_switch_as_its_own_trial():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        master = _multirun_config(
            ["experiment=ablation", "strategy=raw", "arm=baseline", "task=signature_migration", "task.seed=0"]
        )
        entries = plan_trials(master, planned_jobs(master) or [])
    points = sorted(e["sensitivity_point"] for e in entries)
    assert points == sorted(
        f"ablation={a}"
        for a in (
            "none",
            "recall_decay",
            "temptation",
            "stale_memory",
            "summariser_loss",
            "exploration",
            "competence",
            "drift_kinds",
        )
    )


def test_the_agents_study_plans_each_player_once_as_a_level_of_its_own():
    """experiment=agents sweeps who plays as one key (`+level`): 5 levels x 4 arms x 2 families,
    each trial the one `agent=X` (an external agent) or `strategy=Y` (the own loop) composes,
    so no external agent is run once per strategy it ignores."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        master = _multirun_config(["experiment=agents"])
        entries = plan_trials(master, planned_jobs(master) or [])
    cell = ["task=record_upgrade", "arm=drift", "++task.size.steps=6"]
    expected = {
        name: load(compose([*cell, pick])).config_hash
        for name, pick in (
            ("claude_code", "agent=claude_code"),
            ("mini_swe_agent", "agent=mini_swe_agent"),
            ("codex", "agent=codex"),
            ("ledger", "strategy=ledger"),
            ("raw", "strategy=raw"),
        )
    }
    assert len(entries) == 40 and len({e["config_hash"] for e in entries}) == 40
    levels = [e["strategy"] for e in entries]
    assert sorted(set(levels)) == sorted(expected) and all(levels.count(x) == 8 for x in expected)
    got = {
        e["strategy"]: e["config_hash"]
        for e in entries
        if (e["arm"], e["task_family"]) == ("drift", "record_upgrade")
    }
    assert got == expected
    assert {(e["task_family"], e["task_seed"], e["rep"], e["model"]) for e in entries} == {
        ("record_upgrade", 0, 0, "sim"),
        ("config_rename", 0, 0, "sim"),
    }
