"""Fixtures shared across the bench tests."""

from __future__ import annotations

import pytest

from tests.helpers.store import seeded
from tests.helpers.studies import Reference, locked_joblib_study


@pytest.fixture(scope="session")
def joblib_study(tmp_path_factory, docker_ready) -> Reference:
    """The 4-trial reference study through joblib, run once: under an SQLite lock (the retry
    test's attack) and the baseline the Ray and submitit launchers must reproduce."""
    return locked_joblib_study(seeded(tmp_path_factory.mktemp("joblib4")))
