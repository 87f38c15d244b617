"""`make bench`'s one table of both regimes, and the containers' CPU figure it reports: the
study's own containers, whole lives, not every container on the machine nor the trials' windows."""

from __future__ import annotations

import json

import pytest

from bench.perf.containers import StudyContainers, accounting_file, engine_cpu_s, trials_window_cpu_s
from bench.perf.grid import cpu_split, startup_cpu_s
from bench.perf.regimes import io_rows, regimes_rows

BEFORE = {"busy": 100.0, "containers": 10.0, "engine": 1.0}
AFTER = {"busy": 160.0, "containers": 40.0, "engine": 3.0}  # the machine's containers: others' too


def test_the_containers_figure_is_the_studys_own_when_known():
    own = cpu_split(BEFORE, AFTER, harness_s=30.0, trials=10, containers_s=12.0)
    assert own == {"harness": 3.0, "containers": 1.2, "engine": 0.2, "other": 1.6}  # not the machine's 3.0
    assert cpu_split(BEFORE, AFTER, harness_s=30.0, trials=10)["containers"] == 3.0  # unknown: the machine's


def test_a_container_counts_once_at_its_last_reading():
    boxes = StudyContainers("s")
    assert boxes.total_s() is None  # none seen: unreadable, never 0
    for cid, cpu in (("a", 1.0), ("b", 2.0), ("a", 3.5), ("b", None), ("a", 3.0)):
        boxes.seen(cid, cpu)
    assert boxes.total_s() == pytest.approx(5.5)


def test_the_trials_windows_sum_their_trial_end(tmp_path):
    for i, cpu in enumerate((0.5, 1.25)):
        log = tmp_path / "trials" / f"h{i}-x" / "events.jsonl"
        log.parent.mkdir(parents=True)
        log.write_text(
            json.dumps({"kind": "trial_start", "t": {}})
            + "\n"
            + json.dumps({"kind": "trial_end", "t": {"wall_s": 1.0, "sandbox_cpu_s": cpu}})
            + "\n"
        )
    assert trials_window_cpu_s(tmp_path) == pytest.approx(1.75)
    assert trials_window_cpu_s(tmp_path / "none") is None


def _inflight(**over):
    return {
        "trials": 128,
        "sandbox": "docker",
        "trials_in_flight_peak": 128,
        "harness_mb_per_trial_in_flight": 4.8,
        "harness_rss_peak_mb": 612.0,
        "children_rss_peak_mb": 10.0,
        "containers_peak": 128,
        "containers_mem_peak_mb": 778.0,
        "span_over_ideal": 1.19,
        "trials_span_s": 1496.5,
        "ideal_s": 1261.0,
        "ideal_from": {},
        "saturation": {"rpm": 0.5, "input_tpm": 0.88},
        "http_429": 0,
        "calls": 9000,
        **over,
    }


def test_one_table_holds_both_regimes_beside_their_targets_and_floors():
    grid = {
        "cpu_s_per_trial": {"harness": 1.92, "containers": 1.3, "engine": 0.2, "other": 0.1},
        "containers_cross_check_s_per_trial": {
            "machine_cgroup": 1.1,
            "trials_windows": 1.2,
            "study_containers": 2,
        },
        "harness_cpu_s_per_trial": {"workers": 1.5},
        "cores_busy": 0.9,
        "grid_minutes": 110.0,
        "trials": 336,
        "extrapolated": True,
        "n_jobs": 2,
        "model_cpu_s_per_trial": 0.42,
    }
    rows = {r[0]: r for r in regimes_rows({"inflight": _inflight(), "grid": grid, "cpus": 2}, 4800)}
    assert rows["io.trials_in_flight"][2:4] == (">= 128", "ok")
    assert rows["io.harness_mb_per_trial_in_flight"][2:4] == ("<= 32", "ok")  # 4 GB over 128
    assert rows["io.span_over_ideal"][2:4] == ("<= 1.05", "MISSED")
    assert rows["io.limiter_saturation"][1] == "0.88"
    assert rows["cpu.harness_s_per_trial"][2:4] == ("<= 1.5", "MISSED")  # the sandbox's: containers + engine
    assert rows["cpu.grid_minutes_projected"][2] == "floor 60"  # 1.5 CPU-s x 4800 / 2 cores / 60
    assert "machine 1.1" in rows["cpu.containers_s_per_trial"][4]
    # the harness less the sim's own calls, beside the target and never judged against it
    assert rows["cpu.harness_less_model_s_per_trial"][1:4] == ("1.5", "", "")
    del grid["model_cpu_s_per_trial"]  # a study from before the figure existed: unreadable, not 0
    rows = {r[0]: r for r in regimes_rows({"grid": grid, "cpus": 2}, 4800)}
    assert rows["cpu.harness_less_model_s_per_trial"][1] == "unreadable"


def test_fewer_trials_than_the_target_are_judged_on_their_own_count():
    (row, *_) = io_rows(_inflight(trials=32, trials_in_flight_peak=31))
    assert row[2:4] == (">= 32", "MISSED") and "--inflight-trials 128" in row[4]


def test_what_a_study_pays_once_is_told_from_its_trials():
    # two workers: each's first job ends at 12 CPU-s (imports, a first connection), each later job
    # costs 1; worker 8 used 0.5 more after its last job (closing its sandbox)
    recs = [{"pid": 7, "ts": t, "cpu_s": c} for t, c in ((1, 12.0), (2, 13.0), (3, 14.0))] + [
        {"pid": 8, "ts": t, "cpu_s": c} for t, c in ((1, 12.0), (5, 13.0))
    ]
    once = startup_cpu_s(recs, {7: 14.0, 8: 13.5}, launcher_startup=3.0)
    assert once == pytest.approx(3.0 + 11.0 + 11.5)
    # a worker of one job takes the others' cost a job; a pool process of none (loky's resource
    # tracker) is all start
    assert startup_cpu_s(recs[:4], {7: 14.0, 8: 12.0, 9: 0.4}, 3.0) == pytest.approx(3.0 + 11.0 + 11.0 + 0.4)
    assert startup_cpu_s(recs[:1] + recs[3:4], {7: 12.0, 8: 12.0}, 3.0) is None  # no worker ran two jobs
    assert startup_cpu_s([{"pid": 7, "ts": 1}], {7: 1.0}, 3.0) is None  # records from before `cpu_s`


def test_the_grid_trial_is_judged_with_what_is_paid_once_spread_over_the_grid():
    grid = {
        "cpu_s_per_trial": {"harness": 0.9, "containers": 0.5, "engine": 0.1, "other": 0.1},
        "harness_cpu_s_per_trial": {"workers": 0.8},
        "cores_busy": 0.9,
        "grid_minutes": 60.0,
        "trials": 336,
        "extrapolated": True,
        "n_jobs": 2,
        "harness_s_per_grid_trial": {"once_s": 33.6, "per_trial_s": 0.8, "s_per_trial": 0.807},
    }
    rows = {r[0]: r for r in regimes_rows({"grid": grid, "cpus": 2}, 4800)}
    assert rows["cpu.harness_s_per_grid_trial"][1:4] == ("0.807", "<= 0.6", "MISSED")
    assert rows["cpu.harness_s_per_trial"][2:4] == ("", "")  # the slice's figure: shown, not judged
    assert "runc not counted" in rows["cpu.engine_s_per_trial"][4]  # a result from before the engine's cgroup
    rows = {r[0]: r for r in regimes_rows({"grid": {**grid, "engine_measure": "cgroup"}, "cpus": 2}, 4800)}
    assert "the runc each exec starts" in rows["cpu.engine_s_per_trial"][4]


def test_the_engine_is_read_from_its_own_cgroup_and_never_from_the_machines(tmp_path):
    for rel in (
        "cpuacct/ctxbench-engine/cpuacct.usage",
        "cpu,cpuacct/docker.service/cpuacct.usage",
        "unified/ctxbench-engine/cpu.stat",
        "system.slice/docker.service/cpu.stat",
        "cpuacct/cpuacct.usage",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("1\n")
    read = lambda text: accounting_file(text, tmp_path)  # noqa: E731
    assert (
        read("4:memory:/x\n2:cpuacct:/ctxbench-engine\n0::/")
        == tmp_path / "cpuacct/ctxbench-engine/cpuacct.usage"
    )
    assert read("3:cpu,cpuacct:/docker.service\n") == tmp_path / "cpu,cpuacct/docker.service/cpuacct.usage"
    assert read("1:name=systemd:/\n0::/ctxbench-engine\n") == tmp_path / "unified/ctxbench-engine/cpu.stat"
    assert read("0::/system.slice/docker.service\n") == tmp_path / "system.slice/docker.service/cpu.stat"
    # the root cgroup is the whole machine; a cgroup without its file is unreadable: both None
    assert read("2:cpuacct:/\n0::/ctxbench-engine") is None and read("0::/") is None
    assert read("2:cpuacct:/gone\n") is None and read("garbage") is None
    (tmp_path / "cpuacct/docker").mkdir()
    (tmp_path / "cpuacct/docker/cpuacct.usage").write_text("1\n")
    assert read("2:cpuacct:/docker") is None, "a cgroup that holds the containers' would count them twice"
    seconds, how = engine_cpu_s()  # this machine's engine, whichever way it can be read
    assert how in ("cgroup", "daemons", "none") and (seconds is None) == (how == "none")
