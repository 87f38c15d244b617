"""The check cache attacked through the real Docker sandbox and `certify` (bench/accel/checkcache.py,
bench/accel/pristine.py): a verdict is reused only where the whole state that decides it is the
same. The agent's code tries to make one check's verdict stand for another: through a command
of its own, through something a check leaves outside the working copy, through a timeout, a
forged report, or an entry planted in the store. Each test runs the real check, so a guard
removed shows as a verdict the code under test does not earn."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from bench.accel.checkcache import CheckCache
from bench.eventlog.writer import EventLog
from bench.sandbox import SandboxConfig, create
from bench.sandbox.base import SandboxLost
from bench.sandbox.docker import DockerSandbox
from bench.trial.certify import CheckOutcome, HarnessCopy, certify
from tests.bench.trial.conftest import CALC, CHECK, FILES, tiny_task
from tests.helpers.pristine import (
    FILL_QUEUES,
    QUEUE_FLIP,
    behind_the_harness,
    kill_container,
    queue_quota,
    tracked,
    wait_for_queue_room,
)

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_ready")]

WRONG = "def add(a, b):\n    return a - b\n"
# add() is right unless a command of the agent's took the uid's message queue room, which a check
# in the judge's container reads (tests/helpers/pristine.py): the working copy, and so the cache
# key, is the same either way. (A file in the agent's /tmp no longer reaches a check.)
FLIP = QUEUE_FLIP
# add() is right only once a command of the agent's took that room.
NEEDS_FULL = QUEUE_FLIP.replace("a + b if room() else a - b", "a - b if room() else a + b")
# add() is right the first time only: the check leaves a mark outside the working copy.
ONCE = (
    "import os\n\nif os.path.exists('/tmp/seen'):\n    def add(a, b):\n        return a - b\nelse:\n"
    "    open('/tmp/seen', 'w').close()\n\n    def add(a, b):\n        return a + b\n"
)


@pytest.fixture
def boxes(sandbox_cfg: SandboxConfig) -> Iterator[Callable[..., DockerSandbox]]:
    """Fresh Docker sandboxes of the tiny task with the cache's tracking on; all closed after."""
    made: list[DockerSandbox] = []

    def make(**changes: object) -> DockerSandbox:
        box = create(tracked(sandbox_cfg, **changes), FILES, f"cache-{len(made)}")
        assert isinstance(box, DockerSandbox) and box.pristine
        made.append(box)
        return box

    yield make
    for box in made:
        box.close()


@pytest.fixture
def cache(tmp_path) -> CheckCache:
    return CheckCache.for_study(tmp_path, "study", {"run_id": "r", "trial": "t", "study": "study"})


@pytest.fixture
def log(tmp_path) -> EventLog:
    return EventLog(tmp_path / "events.jsonl")


def check(box: DockerSandbox, cache: CheckCache, log: EventLog, code: str | None = None) -> CheckOutcome:
    """The tiny task's step check, with `code` as calc.py (written through the file tools)."""
    if code is not None:
        box.write_file("calc.py", code)
    return certify(box, HarnessCopy(tiny_task()), log, 0, "s01", CHECK, cache=cache)


def cached(log: EventLog) -> list[dict]:
    return [r for r in log.records if r["kind"] == "check_cached"]


def test_a_verdict_is_reused_on_the_same_state_in_any_sandbox_of_the_study(boxes, cache, log):
    a, b = boxes(), boxes()
    first = check(a, cache, log, CALC)
    assert first.passed and cache.stores == 1 and not cached(log) and a.pristine
    again = check(a, cache, log)
    (hit,) = cached(log)
    assert again.passed and again.output == first.output and hit["origin"]["step"] == "s01"
    assert check(b, cache, log, CALC).passed and len(cached(log)) == 2  # another sandbox, the same state
    wrong = check(b, cache, log, WRONG)  # another state: the real check, and its failure stored too
    assert not wrong.passed and len(cached(log)) == 2 and cache.stores == 2


@pytest.fixture
def queues() -> Iterator[None]:
    """This test alone fills or reads the uid's message queue room (first among a test's
    fixtures, so that it is held until every sandbox of the test is closed)."""
    with queue_quota():
        yield


def test_after_a_command_of_the_agents_no_verdict_is_looked_up(queues, boxes, cache, log):
    box = boxes()
    assert check(box, cache, log, FLIP).passed and cache.stores == 1
    filled = box.exec(FILL_QUEUES, reap=True)  # what the `run` tool does: the working copy is unchanged
    assert filled.output.startswith("queues "), filled.output
    assert not box.pristine
    out = check(box, cache, log)
    assert not out.passed and "test_add FAILED" in out.output, "the stored pass stood for a failing check"
    assert not cached(log) and not box.pristine, "a check does not make a tainted sandbox pristine again"


def test_a_verdict_reached_after_a_command_of_the_agents_is_never_stored(queues, boxes, cache, log):
    tainted, clean = boxes(), boxes()
    tainted.exec(FILL_QUEUES, reap=True)
    assert check(tainted, cache, log, NEEDS_FULL).passed  # true here, only because of the command
    assert cache.stores == 0 and not list(cache.root.rglob("*.json"))
    # The room is the uid's in every container: the tainted sandbox goes (its queues with it) before
    # the clean one checks, or its command would decide that check too (docs/threat_model.md).
    tainted.close()
    wait_for_queue_room(clean)
    out = check(clean, cache, log, NEEDS_FULL)
    assert not out.passed and not cached(log), "a clean sandbox got the tainted one's pass"


def test_a_check_that_leaves_a_mark_outside_the_working_copy_fails_when_it_would_fail(boxes, cache, log):
    box = boxes()
    assert check(box, cache, log, ONCE).passed
    assert cache.stores == 0 and not box.pristine
    out = check(box, cache, log)
    assert not out.passed and not cached(log), "the first run's pass stood for the second"
    other = boxes()  # a sandbox without the mark runs it for real and passes
    assert check(other, cache, log, ONCE).passed and not cached(log)


LEFTOVERS = {
    "file in /tmp": "open('/tmp/left', 'w').close()",
    "file in /dev/shm": "open('/dev/shm/left', 'w').close()",
    "file in /tmp rewritten as it was": "open('/tmp/there', 'w').close()",  # only its change time moves
    "SysV shared memory": "import ctypes\nassert ctypes.CDLL(None).shmget(0, 4096, 0o1600) >= 0",
    "process": "import subprocess\nsubprocess.Popen(['sleep', '60'], start_new_session=True)",
    "message queue": QUEUE_FLIP.split("\n\n\ndef room")[0]
    + "\nassert ctypes.CDLL(None).mq_open(b'/left', os.O_CREAT | os.O_RDWR, 0o600, None) >= 0",
}


@pytest.mark.parametrize("leftover", list(LEFTOVERS))
def test_a_check_that_leaves_anything_is_not_stored_and_the_sandbox_is_no_longer_pristine(
    queues, boxes, cache, log, leftover
):
    box = boxes()
    # part of the state the first probe sees, in the container the checks run in (the judge's)
    behind_the_harness(box, "touch /tmp/there", judge=True)
    out = check(box, cache, log, LEFTOVERS[leftover] + "\n" + CALC)
    assert out.passed, out.output
    assert cache.stores == 0 and not box.pristine
    assert check(box, cache, log).passed and not cached(log)
    if leftover == "process":
        assert out.ended and any(r["kind"] == "process_killed" for r in log.records)


# The working copy, its root's extended attributes and mode (which outlive a renew: a mark there
# would be a message to the next trial) were leftovers of a check's while checks ran beside it.
# In the judge's container /work is the judge's copy, read-only: no check reaches the working
# copy, so what it tries leaves nothing, the sandbox stays pristine and the verdict is stored.
WORKING_COPY_WRITES = (
    "import os\nfor name, write in [\n"
    "    ('file', lambda: open('/work/left.pyc', 'w').close()),\n"
    "    ('xattr', lambda: os.setxattr('/work', 'user.k', b'answer')),\n"
    "    ('mode', lambda: os.chmod('/work', 0o750)),\n"
    "]:\n"
    "    try:\n        write()\n        print('ctxbench-wrote', name)\n"
    "    except OSError as e:\n        print('ctxbench-refused', name, e.errno)\n"
)


def test_a_check_cannot_write_the_working_copy_or_mark_its_root(boxes, cache, log):
    box = boxes()
    mode = box.workdir.stat().st_mode
    out = check(box, cache, log, WORKING_COPY_WRITES + CALC)
    assert out.passed and "ctxbench-wrote" not in out.output, out.output
    assert out.output.count("ctxbench-refused") >= 3, out.output  # each write was tried, and refused
    assert not (box.workdir / "left.pyc").exists() and box.workdir.stat().st_mode == mode
    assert "user.k" not in os.listxattr(box.workdir)
    assert box.pristine and cache.stores == 1  # nothing was left: the verdict stands for its state
    assert check(box, cache, log).passed and len(cached(log)) == 1


def test_no_verdict_counts_once_the_agents_container_died(boxes, cache, log):
    """A stored verdict needs no exec, and a check runs in the judge's container: neither would
    meet the agent's dead container. The trial is `sandbox_lost` (SandboxLost), never a success."""
    box = boxes()
    assert check(box, cache, log, CALC).passed and cache.stores == 1
    kill_container(box.container_id)
    with pytest.raises(SandboxLost, match="container .* is exited"):
        check(box, cache, log)
    assert not cached(log)


def test_a_timed_out_check_is_not_stored(boxes, cache, log):
    box = boxes(exec_timeout_s=2.0)
    out = check(box, cache, log, "import time\ntime.sleep(30)\n" + CALC)
    assert out.timed_out and not out.passed
    assert cache.stores == 0 and not list(cache.root.rglob("*.json"))


FORGERIES = {
    "SystemExit(0) in the check": "raise SystemExit(0)\n",
    # a message of its own on every channel it holds: only its connection to the comparer (remote.py)
    "a second report": (
        "import json, os\nfor fd in map(int, os.listdir('/proc/self/fd')):\n"
        "    try:\n"
        "        if fd > 2 and os.readlink(f'/proc/self/fd/{fd}').startswith(('pipe:', 'socket:')):\n"
        "            os.write(fd, (json.dumps({'exit': 0, 'passed': [], 'failed': []}) + '\\n').encode())\n"
        "    except OSError:\n"
        "        pass\n"
    ),
}


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_check_with_a_forged_verdict_is_not_stored(boxes, cache, log, forgery):
    box = boxes()
    out = check(box, cache, log, FORGERIES[forgery] + CALC)
    assert not out.passed and any(v.startswith("check: ") for v in out.violations), out.violations
    assert box.pristine, "nothing was left behind: only the forgery keeps it out of the store"
    assert cache.stores == 0


def test_a_reused_early_exit_logs_the_same_violation_as_the_run_it_replays(boxes, cache, log):
    box = boxes()
    first = check(box, cache, log, "import os\nos._exit(0)\n" + CALC)
    replay = check(box, cache, log)
    assert len(cached(log)) == 1, "an exit is a verdict of the state like any other"
    assert not first.passed and not replay.passed
    assert first.violations and [v for v in replay.violations if "exited 0" in v] == [
        v for v in first.violations if "exited 0" in v
    ]
