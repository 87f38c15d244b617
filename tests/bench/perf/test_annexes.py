"""bench/perf/annexes.py, what each annex buys in `make bench`: every annex has a variant that
switches it off alone (the real config says so), the variants run round by round, and the
figures are the median with its range and n. The figures themselves are `make bench`'s, never
asserted here."""

from __future__ import annotations

import pytest

from bench.config import TASK_ANNEX_SWITCHES, compose
from bench.perf import annexes
from bench.sandbox.base import ANNEX_SWITCHES

SWITCHES = (*(("sandbox", k) for k in ANNEX_SWITCHES), *(("task", k) for k in TASK_ANNEX_SWITCHES))


def test_every_switch_has_a_variant_that_turns_it_off_alone():
    grid = compose(["experiment=grid"])
    assert all(grid[group][k] is True for group, k in SWITCHES)  # all on is the grid itself
    seen = set()
    for name, v in annexes.variants().items():
        cfg = compose(["experiment=grid", *v["overrides"]])
        off = {(group, k) for group, k in SWITCHES if cfg[group][k] is False}
        assert len(off) <= 1, f"{name} turns off more than one switch: {off}"
        seen |= off
    assert seen == set(SWITCHES)  # a new switch needs its variant


def test_the_compose_variant_runs_hydras_own_sweeper():
    def sweeper(*overrides: str) -> str:
        return compose(["experiment=grid", *overrides], return_hydra_config=True).hydra.sweeper._target_

    (variant,) = [v for k, v in annexes.variants().items() if k.startswith("compose cache")]
    assert sweeper().endswith("CtxbenchSweeper")
    assert sweeper(*variant["overrides"]) == "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def test_the_kept_tasks_variant_turns_task_kept_off_and_nothing_else():
    variant = annexes.variants()["kept tasks and answers"]["overrides"]
    cfg = compose(["experiment=grid", *variant])
    assert cfg.task.kept is False
    assert all(cfg.sandbox[k] is True for k in ANNEX_SWITCHES)


def _fake_run(calls: list):
    def run(results, full, n_jobs, seeds, overrides):
        calls.append(overrides)
        k = len(calls)
        return {
            "trials": 48 * seeds,
            "wall_s": 48.0 * k,
            "cpu_s_per_trial": {"harness": 0.5 * k, "containers": 1.0, "engine": None},
        }

    return run


def test_variants_run_round_by_round_and_the_summary_has_median_range_and_n(tmp_path):
    calls: list = []
    report = annexes.annexes_run(tmp_path, seeds=1, rounds=2, n_jobs=2, runner=_fake_run(calls))
    names = list(annexes.variants())
    assert len(calls) == 2 * len(names)
    assert calls[: len(names)] == calls[len(names) :]  # same order each round
    assert calls[: len(names)] == [v["overrides"] for v in annexes.variants().values()]
    on = report["summary"][annexes.ALL_ON]
    k = len(names)  # all on ran first and (k+1)th: walls 48 and 48(k+1) over 48 trials
    assert on["n"] == 2 and on["trials"] == [48]
    assert on["wall_s_per_trial"] == {"median": (1 + k + 1) / 2, "min": 1.0, "max": k + 1.0}
    assert on["engine_cpu_s_per_trial"] is None  # unreadable stays unreadable, never 0
    last = report["summary"][names[-1]]
    assert last["vs_all_on"]["wall_s_per_trial"] == round(((k + 2 * k) / 2) / ((1 + k + 1) / 2), 2)
    assert last["vs_all_on"]["containers_cpu_s_per_trial"] == 1.0
    text = annexes.text(report)
    assert all(name in text for name in names) and "2 x 48" in text and "unreadable" in text
    assert not list(tmp_path.glob("*/results"))  # each round's store removed


def test_only_runs_the_variants_named(tmp_path):
    calls: list = []
    report = annexes.annexes_run(tmp_path, rounds=1, only=(annexes.ALL_ON,), runner=_fake_run(calls))
    assert len(calls) == 1 and list(report["summary"]) == [annexes.ALL_ON]


@pytest.mark.docker
@pytest.mark.timeout(900)  # two studies' starts and two trials on a loaded machine
def test_a_real_round_runs_without_kept_tasks_too(docker_ready, tmp_path):
    one_trial = ("task=config_rename", "strategy=raw", "arm=baseline", "++task.size.steps=6")
    report = annexes.annexes_run(
        tmp_path,
        seeds=1,
        rounds=1,
        only=(annexes.ALL_ON, "kept tasks and answers"),
        slice_overrides=one_trial,
    )
    for row in report["summary"].values():
        assert row["n"] == 1 and row["trials"] == [1]
        assert row["harness_cpu_s_per_trial"]["median"] > 0 and row["wall_s_per_trial"]["median"] > 0
