"""Fixtures shared across the bench tests."""

from __future__ import annotations

import pytest

from tests.helpers.both_ways import BothWays, run_both_ways
from tests.helpers.studies import Reference, locked_joblib_study


@pytest.fixture(scope="session")
def joblib_study(tmp_path_factory, docker_ready) -> Reference:
    """The 4-trial reference study through joblib, run once: under an SQLite lock (the retry
    test's attack) and the baseline the Ray and submitit launchers must reproduce."""
    return locked_joblib_study(tmp_path_factory.mktemp("joblib4"))


@pytest.fixture(scope="session")
def both_ways(tmp_path_factory) -> BothWays:
    """The 4-trial plan through joblib and through the threads launcher, run once (both_ways.py)."""
    return run_both_ways(tmp_path_factory.mktemp("both"))
