"""Refactoring the configs keeps the config hashes of existing trials (docs/design.md §4): the
hashes of a fixed set of jobs (every grid cell at seed 0, every model, strategy, task, sandbox and
experiment) were pinned from main at 767c270 by `scripts/config_hashes.py --write`."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("config_hashes", ROOT / "scripts" / "config_hashes.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_pinned_job_keeps_its_config_hash():
    script = _script()
    pinned = json.loads(script.FIXTURE.read_text())
    assert sorted(pinned) == sorted(" ".join(j) for j in script.jobs())
    now = script.hashes()
    assert {k: v for k, v in now.items() if pinned[k] != v} == {}


def test_a_changed_value_moves_the_hash():
    from bench.config import compose, load

    assert (
        load(compose(["strategy=raw"])).config_hash
        != load(compose(["strategy=raw", "limits.max_turns=7"])).config_hash
    )
