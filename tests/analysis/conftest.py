"""The analysis is tested on a study the harness itself wrote (tests/helpers/harness_study.py):
16 sim trials (raw, compaction x baseline, drift_compaction x 2 seeds x 2 reps) plus a
rerun, two FAILED trials and two more studies, through `python -m bench`. So the MLflow
schema and the event logs the tests read are the ones the harness logs, not a copy of them.

Constructed inputs remain only where a real run cannot produce the case on demand (e.g. a
compaction and a drift on the same turn, a log with a torn line); those tests say so."""

from __future__ import annotations

import pytest

from tests.helpers.harness_study import HarnessStudy, write_study


@pytest.fixture(scope="session")
def study(tmp_path_factory) -> HarnessStudy:
    return write_study(tmp_path_factory.mktemp("harness-study"))


@pytest.fixture(scope="session")
def runs(study):
    from analysis import load_runs

    return load_runs(study.uri, study.experiment, study.study)
