"""Code that is right only in the judge (bench/providers/attacks/judged_path.py; issue 42, item 3):
the judge's copy is at the agent's own path in a container made like the agent's
(bench/sandbox/docker.py), so code under test that compares where it runs with what the agent's
own run saw (cwd, `__file__`, hostname, pid 1, uid, /judge) finds nothing that differs
and is as wrong in the check as in the working copy. With the guard removed (the copy at
/judge/tree, as before) the same code passes the check while the agent's own run of the tests fails."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from bench.eventlog.writer import EventLog
from bench.providers.attacks import judged_path
from bench.sandbox.base import Sandbox, SandboxConfig
from bench.sandbox.docker import create
from bench.sandbox.engine import _client
from bench.trial.certify import HarnessCopy, certify
from tests.bench.trial.conftest import CHECK, FILES, FINAL, tiny_task
from tests.bench.trial.unguard import removed

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_box(sandbox_cfg: SandboxConfig, docker_ready: None) -> Iterator[Sandbox]:
    sandbox = create(sandbox_cfg, FILES, f"judged-path-{uuid.uuid4().hex[:8]}")
    yield sandbox
    sandbox.close()
    left = _client().api.containers(all=True, filters={"label": [f"ctxbench.trial={sandbox.trial_id}"]})
    assert left == [], "the agent's and the judge's containers both go with the sandbox"


def _plant(box: Sandbox) -> str:
    """The code, and the agent's own run of it: the record, then the shipped tests as the agent runs them."""
    box.write_file("where.py", judged_path.WHERE)
    box.write_file("calc.py", judged_path.CALC)
    recorded = box.exec("python3 where.py", reap=True)
    assert recorded.exit_code == 0 and "recorded {'cwd': '/work'" in recorded.output, recorded.output
    own = box.exec("python3 -B -m pytest -q -p no:cacheprovider tests", reap=True)
    assert own.exit_code != 0 and "2 failed" in own.output, own.output  # wrong where the agent runs it
    return own.output


def _check(box: Sandbox, tmp_path, step: str, command: str) -> tuple[bool, str]:
    log = EventLog(tmp_path / f"{step}.jsonl")
    out = certify(box, HarnessCopy(tiny_task()), log, 0, step, command)
    return out.passed, out.output


@pytest.mark.parametrize("step, command", [("s01", CHECK), ("final", FINAL)])
def test_code_right_only_in_the_judge_fails_the_check_as_it_fails_the_agents_run(
    docker_box, tmp_path, step, command
):
    _plant(docker_box)
    passed, output = _check(docker_box, tmp_path, step, command)
    assert not passed, output
    assert judged_path.MARK + "unseen" in output and "JUDGED" not in output, output


@pytest.mark.parametrize("step, command", [("s01", CHECK), ("final", FINAL)])
def test_without_the_judges_container_at_the_agents_path_it_passes(docker_box, tmp_path, step, command):
    _plant(docker_box)
    with removed("judged_path"):
        passed, output = _check(docker_box, tmp_path, step, command)
    assert passed, output
    assert judged_path.MARK + "JUDGED (cwd, root)" in output, output
