"""The I/O-bound regime of `make bench` (bench/perf/inflight.py): its plan gives each trial its own
conversation on the server, overlap counting, and a two-trial run measured end to end."""

from __future__ import annotations

import pytest

from bench.perf.inflight import inflight_run, peak_overlap, plan, text


def test_peak_overlap():
    assert peak_overlap([]) == 0
    assert peak_overlap([(0, 10), (1, 2), (3, 4), (3.5, 11)]) == 3
    assert peak_overlap([(0, 1), (1, 2)]) == 1  # one ends as the other starts


def test_every_planned_trial_is_its_own_conversation():
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    (jobs,) = BasicSweeper.split_arguments(OverridesParser.create().parse_overrides(plan(7)), None)
    assert len(jobs) == 8  # 2 families x 4 seeds
    # the server keys a conversation by task id (family/seed) and sampling seed: all distinct
    assert len({tuple(o for o in job if o.startswith(("task=", "task.seed=", "rep="))) for job in jobs}) == 8


@pytest.mark.timeout(900)  # two studies (or one, paced) on a loaded machine: minutes
def test_two_trials_in_flight_measured(tmp_path):
    r = inflight_run(tmp_path, trials=2, n_jobs=2, rpm=600, input_tpm=1_000_000, time_scale=0.05)
    assert r["trials"] == 2 and r["trials_in_flight_peak"] == 2 and len(r["verdicts"]) == 2
    assert r["http_429"] == 0 and r["calls"] >= 4 and 0 < r["saturation"]["rpm"] < 1
    assert r["harness_rss_peak_mb"] > 50 and r["ideal_s"] > 0 and r["trials_span_s"] > 0
    assert "trials in flight (peak)                  2" in text(r)
    phases = r["start_phases"]  # what spreads the starts: each phase timed for both trials
    assert phases["trials"] == 2 and all(
        phases[k]["median_s"] >= 0 for k in phases if k.startswith(("claim", "sandbox"))
    )
