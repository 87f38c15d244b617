"""Fixtures shared across the bench tests."""

from __future__ import annotations

import pytest

from tests.helpers.both_ways import BothWays, run_both_ways
from tests.helpers.once import once
from tests.helpers.studies import Reference, locked_joblib_study


@pytest.fixture(scope="session")
def joblib_study(tmp_path_factory, worker_id, docker_ready) -> Reference:
    """The 4-trial reference study through joblib, run once per session: under an SQLite lock
    (the retry test's attack) and the baseline the Ray and submitit launchers must reproduce."""
    return once(tmp_path_factory, worker_id, "joblib4", locked_joblib_study)


@pytest.fixture(scope="session")
def both_ways(tmp_path_factory, worker_id) -> BothWays:
    """The 4-trial plan through joblib and through the threads launcher, run once per session
    (both_ways.py). same_records' tests change the threads side's store and undo it; the threads
    launcher's test reads only what was kept when the studies ended and the progress file."""
    return once(tmp_path_factory, worker_id, "both", run_both_ways)
