"""The check cache and sandbox reuse change no verdict (issue 15): one slice of the grid, run
through the real entry point (`python -m bench -m experiment=grid`, 2 joblib workers, model=sim,
the Docker sandbox) with `sandbox.check_cache` and `sandbox.reuse` on, and again with both off,
gives every trial the same verdict, the same check, invariant and violation events and the same
final tree; the run with them on reused verdicts, the other none. (A sandbox goes to the next
trial only if no check ran code in it, every check of its trial a cache hit (issue 42); whether
this slice has such a trial depends on the workers' order: test_reuse_trials.py makes one.)

The slice is 2 strategies x 2 arms of one seed of one shrunk task: 4 trials, two of which fail
(config_rename seed 1 under drift_compaction), so both kinds of verdict are compared. Seed 0
(4 more trials, all successes) was dropped: it added no verdict kind, and the trials of one seed
already share trees (cache hits) and a worker (reuse)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.config import ROOT
from tests.helpers.pristine import trial_outcomes
from tests.helpers.studies import study_env

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

SLICE = (
    "strategy=raw,compaction",
    "arm=baseline,drift_compaction",
    "task=config_rename",
    "task.seed=1",
    "++task.size.steps=6",
)


def _study(results: Path, on: bool) -> None:
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "-m",
        "experiment=grid",
        *SLICE,
        f"sandbox.check_cache={on}",
        f"sandbox.reuse={on}",
        "study.name=equality",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=study_env(results), capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def test_cache_and_reuse_change_no_verdict_and_no_tree(tmp_path, docker_ready):
    _study(tmp_path / "on", True)
    _study(tmp_path / "off", False)
    on, cached, reused = trial_outcomes(tmp_path / "on")
    off, cached_off, reused_off = trial_outcomes(tmp_path / "off")
    assert len(off) == 4 and on.keys() == off.keys()
    assert {o.success for o in off.values()} == {True, False}, "the slice compares both verdicts"
    assert cached > 0, "the cached run reused verdicts"
    assert (cached_off, reused_off) == (0, 0) and not (tmp_path / "off" / "check-cache").exists()
    for config_hash, want in off.items():
        got = on[config_hash]
        assert (got.success, got.failure_reason, got.steps_passed, got.final_tree_sha, got.turns) == (
            want.success,
            want.failure_reason,
            want.steps_passed,
            want.final_tree_sha,
            want.turns,
        ), config_hash
        assert got.verdicts == want.verdicts, config_hash
