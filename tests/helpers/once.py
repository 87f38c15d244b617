"""A session fixture's value built once per test session, not once per xdist worker.

pytest-xdist runs a session-scoped fixture in every worker that asks for it: a study two test
modules read, run on two workers, ran twice. `once` is pytest-xdist's own recipe for this: the
first worker to ask builds the value under a lock, in a folder every worker of the session sees,
and keeps it pickled there; the others read it back. Every worker then shares one value and one
folder: a test that changes them undoes its change under a lock the readers take too
(tests/bench/perf/test_same_records.py). Not xdist_group: --dist loadgroup stopped grouping with
pytest 9.2 (pytest-dev/pytest-xdist#1386)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from filelock import FileLock

T = TypeVar("T")


def once(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, name: str, build: Callable[[Path], T]
) -> T:
    """`build(folder)` once per session; `worker_id` is xdist's fixture ("master" without xdist)."""
    if worker_id == "master":  # one process: the session fixture runs once anyway
        return build(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent  # the session's; each worker's basetemp is below it
    kept = shared / f"{name}.pickle"
    with FileLock(str(shared / f"{name}.lock")):
        if kept.exists():
            return pickle.loads(kept.read_bytes())
        folder = shared / name
        folder.mkdir()
        value = build(folder)
        kept.write_bytes(pickle.dumps(value))
        return value
