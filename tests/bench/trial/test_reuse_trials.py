"""The check cache and sandbox reuse through the real runner (bench.trial.runner.run): scripted
trials of the tiny task, one after another in this process as a worker runs them, in one study,
with `sandbox.check_cache=true sandbox.reuse=true` and the Docker sandbox.

The agent's code is right only while the agent's uid has room for a POSIX message queue, which
the kernel counts per uid across containers (tests/helpers/pristine.py): a trial that takes it
with `run` (in the agent's container) and then submits the same code as an earlier, passing trial
has the same working copy, and its check (in the judge's container) fails, so only the taint keeps
the earlier pass from standing for that check. (A file in the agent's /tmp, the channel before the
judge's own container, no longer reaches a check.)"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from omegaconf import OmegaConf

from bench.accel import pool
from bench.config import compose, load
from bench.providers.scripted import ScriptedProvider
from bench.sandbox.docker import DockerSandbox
from tests.bench.trial.conftest import kinds, tiny_task
from tests.helpers.pristine import FILL_QUEUES, QUEUE_FLIP, container_exists, queue_quota

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_ready")]

WRITE = [{"name": "write_file", "args": {"path": "calc.py", "content": QUEUE_FLIP}}]
SUBMIT = [{"name": "submit_step", "args": {"notes": "add() stays", "invariants": []}}]
HONEST = [WRITE, SUBMIT]
FLIPPED = [WRITE, [{"name": "run", "args": {"command": FILL_QUEUES}}], SUBMIT]


@pytest.fixture
def trials(tmp_path, monkeypatch) -> Iterator[Callable[..., tuple[Any, DockerSandbox]]]:
    """Run scripted trials of one study in this process; returns (result, the trial's sandbox).
    Holds the uid's message queue room until every sandbox is closed (`queue_quota`)."""
    with queue_quota():
        yield from _trials(tmp_path, monkeypatch)


def _trials(tmp_path, monkeypatch) -> Iterator[Callable[..., tuple[Any, DockerSandbox]]]:
    import bench.trial.runner as runner

    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    monkeypatch.setattr(runner.tasks, "generate", lambda *a, **k: tiny_task())
    study = f"reuse-{uuid.uuid4().hex[:8]}"
    made: list[DockerSandbox] = []
    real_acquire = pool.acquire

    def acquire(*a: Any, **k: Any) -> Any:
        box = real_acquire(*a, **k)
        made.append(box)
        return box

    # the runner loads it by name (runner.ANNEXES) at each trial
    monkeypatch.setattr(pool, "acquire", acquire)

    def play(script: list) -> tuple[Any, DockerSandbox]:
        cfg = compose(
            [
                "model=adversary",
                "sandbox.check_cache=true",
                "sandbox.reuse=true",
                "resume=false",
                "limits.max_turns_per_step=4",
                f"study.name={study}",
            ]
        )
        OmegaConf.update(cfg, "model.script", script)
        return runner.run(load(cfg)), made[-1]

    yield play
    pool.close_all()
    for box in made:
        box.close()


def _end(result: Any) -> dict:
    (end,) = kinds(result.events_path, "trial_end")
    return end


KEEP_TRIES = 3


def kept_after_honest(trials: Callable[..., tuple[Any, DockerSandbox]]) -> DockerSandbox:
    """The sandbox of an honest trial, kept by the pool. The first honest trial runs its checks
    (its code ran there: its sandbox goes to no other trial, issue 42) and stores their verdicts;
    the next one's every check is a cache hit, so no code runs in its sandbox and the pool keeps
    it. Not keeping that one is the safe miss (a new sandbox, no verdict reused), and twice in
    CI an honest trial's was not kept: so the test retries it, and warns each miss with its
    reason (pristine.py), which the run's warnings summary shows. Three misses in a row fail."""
    first, box = trials(HONEST)
    assert first.success and pool.idle() == 0, "a sandbox a check ran code in went to the pool"
    assert box.not_reusable_because.startswith("a check ran the agent's code here")
    reasons = []
    for _ in range(KEEP_TRIES):
        hit, box = trials(HONEST)
        assert hit.success and not _end(hit)["t"]["sandbox_reused"]
        if pool.idle() == 1:
            return box
        reasons.append(box.not_reusable_because)
        warnings.warn(f"an honest trial's sandbox was not kept: {reasons[-1]}", stacklevel=2)
    pytest.fail(f"no honest trial's sandbox was kept in {KEEP_TRIES} tries: {reasons}")


def test_a_worker_shares_its_sandbox_and_verdicts_only_until_the_agent_runs_a_command(trials):
    box = kept_after_honest(trials)
    second, again = trials(HONEST)
    assert again is box and _end(second)["t"]["sandbox_reused"]
    # the step and the final check
    assert second.success and len(kinds(second.events_path, "check_cached")) == 2
    flipped, tainted = trials(FLIPPED)
    assert tainted is box and _end(flipped)["t"]["sandbox_reused"]
    assert not flipped.success and flipped.failure_reason == "step_failed", (
        "an earlier pass stood for this check"
    )
    assert kinds(flipped.events_path, "check_cached") == []
    assert pool.idle() == 0 and not container_exists(box.container_id), "a tainted sandbox is removed"
    fourth, new = trials(HONEST)
    assert new is not box and not _end(fourth)["t"]["sandbox_reused"] and fourth.success


def test_an_interrupted_trial_removes_the_sandbox_it_was_handed(trials, monkeypatch):
    box = kept_after_honest(trials)

    def interrupt(self, *a, **k):
        raise KeyboardInterrupt("signal 15")

    monkeypatch.setattr(ScriptedProvider, "complete", interrupt)
    with pytest.raises(KeyboardInterrupt):
        trials(HONEST)
    assert pool.idle() == 0 and not container_exists(box.container_id) and not box.workdir.exists()
