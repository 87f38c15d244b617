"""bench/perf/grid.py, the grid figure of `make bench`: a real multirun of a small slice (4 Docker
trials, through the grid's own launcher and callback), measured as `make bench` measures the
336-trial slice: the trials the progress file counts, the CPU split by part and by process,
the extrapolation to the 4,800-trial grid."""

from __future__ import annotations

import pytest

from bench.perf.grid import GRID_TRIALS, grid_run


@pytest.mark.docker
@pytest.mark.timeout(600)  # a study's start (imports, the plan) and 4 trials on a loaded machine
def test_a_grid_slice_is_run_counted_and_split(docker_ready, tmp_path):
    # An override of a swept key replaces its list: 1 family x 2 seeds x 1 strategy x 2 arms.
    out = grid_run(
        tmp_path / "results",
        False,
        n_jobs=2,
        seeds=2,
        overrides=("task=config_rename", "strategy=raw", "arm=baseline,drift", "++task.size.steps=6"),
    )
    assert out["trials"] == 4 and sum(out["outcomes"].values()) == 4
    assert out["extrapolated"] and "++task.size.steps=6" in out["command"]
    # startup once, the rest scaled from 4 trials to the grid's
    per_trial_s = (out["wall_s"] - out["startup_s"]) / 4
    assert out["grid_minutes"] == pytest.approx((out["startup_s"] + per_trial_s * GRID_TRIALS) / 60, rel=0.02)
    split = out["cpu_s_per_trial"]
    assert split["harness"] > 0 and split["containers"] is not None and split["containers"] > 0
    assert out["containers_cross_check_s_per_trial"]["study_containers"] >= 1  # its own, found by label
    by_process = out["harness_cpu_s_per_trial"]
    assert by_process["workers"] > 0 and 0 < by_process["launcher_startup"] <= by_process["launcher"]
    # polled from /proc: at most what the whole tree's rusage says (a process ends between polls)
    parts = by_process["launcher"] + by_process["workers"] + by_process["workers_children"]
    assert parts <= split["harness"] * 1.05 + 0.01, "a part of the harness counted twice"
    # the sim's calls run in the workers' threads: a part of the workers' CPU, never more
    assert 0 < out["model_cpu_s_per_trial"] <= by_process["workers"]
    # the grid's jobs write no `.hydra/` (conf/experiment/grid.yaml): each trial records its config
    jobs = [d for d in (tmp_path / "results" / "hydra" / "multirun").glob("*/*/*") if d.is_dir()]
    assert len(jobs) == 4 and not any((d / ".hydra").exists() for d in jobs)
    assert len(list((tmp_path / "results" / "trials").glob("*/config.yaml"))) == 4
