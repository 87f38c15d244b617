"""Issue 42's attacks on the judge through a whole trial with their guard removed, beside test_adversary.py
(where they fail as the agent's own failure): what each guard is for.

- `oom_pid1` without "a container killed by memory is the agent's" (docker.py `_check_alive`): the
  container's death is booked as ours, `sandbox_lost`, FAILED and excluded, on an engine that
  cannot keep pid 1 out of the OOM killer's reach; where it can, pid 1 lives and nothing is lost.
  (judge_channel's guards removed: tests/bench/sandbox/test_judge_channel.py, through certification;
  the reused sandbox's message: tests/bench/accel/test_reuse.py.)"""

from __future__ import annotations

import pytest

from bench.core.outcomes import INFRA
from bench.sandbox import docker as docker_backend
from bench.sandbox.base import SandboxLost
from tests.bench.trial.adversary_run import play

pytestmark = pytest.mark.docker


def test_without_its_guard_a_container_the_agent_filled_is_booked_as_ours(
    tmp_path, monkeypatch, docker_ready
):
    monkeypatch.setattr(docker_backend, "failure", lambda reason, detail: SandboxLost(detail))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    obs = play("oom_pid1", tmp_path / "results")
    if docker_backend._PID1_OOM[0]:
        pytest.skip("this engine keeps pid 1 out of the OOM killer's reach: the guard is not needed here")
    assert (obs["mlflow_status"], obs["outcome_class"], obs["failure_reason"]) == (
        "FAILED",
        INFRA,
        "sandbox_lost",
    ), obs
    assert obs["containers_left"] == [] and obs["scratch_left"] == []
