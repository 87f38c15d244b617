"""`make bench` pieces: phase attribution (self time), the table, and the exec comparison."""

from __future__ import annotations

import time

import pytest

from bench.perf.benchmark import Phases, _row, exec_overhead, pct, table


def test_phases_attribute_self_time_and_restore_what_they_wrap():
    class Work:
        def outer(self):
            time.sleep(0.05)
            self.inner()

        def inner(self):
            time.sleep(0.1)

    ph = Phases()
    ph.wrap(Work, "outer", "outer")
    ph.wrap(Work, "inner", "inner")
    Work().outer()
    ph.restore()
    assert ph.self_s["inner"] == pytest.approx(0.1, abs=0.05)
    assert ph.self_s["outer"] == pytest.approx(0.05, abs=0.04)  # the nested call is not counted twice
    assert ph.calls == {"outer": 1, "inner": 1}
    Work().outer()
    assert ph.calls["inner"] == 1  # unwrapped again


def test_rows_flag_missed_targets_and_the_table_lines_up():
    assert pct([1, 2, 3, 4], 0.5) == 2.5 and pct([5], 0.95) == 5
    rows = [
        _row("exec_overhead_ratio", 0.9),
        _row("grid_minutes", 33.0, "extrapolated"),
        _row("task_generate_ms[config_rename]", 3.0),
    ]
    assert [r[3] for r in rows] == ["ok", "MISSED", "ok"]
    lines = table(rows).splitlines()
    assert lines[0].startswith("metric") and len(lines) == 5 and "MISSED" in lines[3]


@pytest.mark.docker
def test_exec_overhead_compares_the_same_command_in_the_same_container(docker_ready):
    out = exec_overhead("signature_migration", n=4)
    assert out["true"]["n"] == 4 and out["true"]["ratio"] > 0
    assert out["container_start_s_p50"] > 0 and out["in_container_pytest_start_ms_p50"] > 0


def test_the_grids_cpu_split_is_per_trial_and_the_rest_is_what_no_part_explains():
    from bench.perf.grid import _machine_cpu_s, cpu_split

    before = {"busy": 100.0, "containers": 10.0, "engine": 1.0}
    after = {"busy": 160.0, "containers": 30.0, "engine": 3.0}
    assert cpu_split(before, after, harness_s=30.0, trials=10) == {
        "harness": 3.0,
        "containers": 2.0,
        "engine": 0.2,
        "other": 0.8,
    }
    unknown = cpu_split({**before, "containers": None}, after, harness_s=30.0, trials=10)
    assert unknown["containers"] is None and unknown["other"] == 2.8  # never a made-up figure
    now, measure = _machine_cpu_s()
    assert measure in ("cgroup", "daemons", "none")
    assert now["busy"] is not None and now["busy"] > 0 and now["engine"] is not None  # /proc is readable here
