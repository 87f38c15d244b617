"""Every task family is solvable in every arm: the oracle, through the real harness and the
Docker sandbox, succeeds. CI runs one seed per (family, arm); the full 50-seed sweep is slow."""

from __future__ import annotations

import pytest

import tasks
from bench.config import compose, load
from bench.trial import run

ARMS = ("baseline", "compaction", "drift", "drift_compaction")


def _trial(tmp_path, monkeypatch, family: str, arm: str, seed: int, *extra: str):
    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    cfg = load(compose([f"task={family}", f"task.seed={seed}", f"arm={arm}", "model=oracle", *extra]))
    return run(cfg)


@pytest.mark.docker
@pytest.mark.parametrize("arm", ARMS)
@pytest.mark.parametrize("family", tasks.FAMILIES)
def test_oracle_solves_every_family_in_every_arm(tmp_path, monkeypatch, docker_ready, family, arm):
    result = _trial(tmp_path, monkeypatch, family, arm, 1, "task.size.steps=6")
    assert (result.status, result.failure_reason) == ("success", "")


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(50))
@pytest.mark.parametrize("arm", ARMS)
@pytest.mark.parametrize("family", tasks.FAMILIES)
def test_oracle_solves_fifty_seeds(tmp_path, monkeypatch, docker_ready, family, arm, seed):
    result = _trial(tmp_path, monkeypatch, family, arm, seed)
    assert (result.status, result.failure_reason) == ("success", "")
