"""The reference path imports no annex: a default trial (every switch off) runs in a fresh
interpreter and no module of bench/accel, nor a module an annex alone needs, is loaded, and its
task is generated afresh each time it is asked for (docs/design.md §2); the same trial with the
grid's switches on loads them and keeps its task (so the check can fail)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# What only an annex needs: its own modules and the libraries only they import.
ANNEX_ONLY = ("bench.accel", "pygit2")

_TRIAL = """
import json, sys
import tasks
from bench import config, preflight
from bench.trial import runner
overrides = sys.argv[1:]
prepared = preflight.check(overrides)
result = runner.run(config.compose(overrides), prepared)
# after the trial, as its harness and its simulated model would ask again: one task or two?
tid = prepared.parts.task.task_id
kept = tasks.from_id(tid) is tasks.from_id(tid)
print(json.dumps({"status": result.status, "modules": sorted(sys.modules), "kept": kept}))
"""


def _trial(tmp_path: Path, *switches: str) -> tuple[str, list[str], bool]:
    overrides = [
        "sandbox=local",
        "task.size.steps=6",
        f"results_dir={tmp_path}",
        "tracking.tracing=false",
        *switches,
    ]
    out = subprocess.run(
        [sys.executable, "-c", _TRIAL, *overrides],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return found["status"], [m for m in found["modules"] if m.startswith(ANNEX_ONLY)], found["kept"]


def test_a_default_trial_loads_no_annex_and_keeps_no_task(tmp_path):
    status, annexes, kept = _trial(tmp_path)
    assert status == "success"
    assert annexes == []
    assert kept is False


@pytest.mark.parametrize(
    "switch, module",
    [
        ("sandbox.fast_git=true", "bench.accel.fastgit"),
        ("sandbox.check_cache=true", "bench.accel.checkcache"),
        ("sandbox.reuse=true", "bench.accel.pool"),
        ("task.kept=true", "bench.accel.kept_tasks"),
    ],
)
def test_each_switch_loads_its_annex(tmp_path, switch, module):
    status, annexes, kept = _trial(tmp_path, switch)
    assert status == "success"
    assert module in annexes
    assert kept is (switch == "task.kept=true")
