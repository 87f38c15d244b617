"""Helpers for the tests that attack the check cache and sandbox reuse (bench/accel/checkcache.py,
bench/accel/pristine.py, bench/accel/pool.py).

`tracked(cfg)` is the real sandbox config with both switches on (what `experiment=grid` sets).
`behind_the_harness(box, cmd)` runs a command in a sandbox's container through the engine, not
through the sandbox, so nothing taints it: what a process the tracking missed would do there.
`FILL_QUEUES`, `QUEUE_FLIP` and `queue_quota()`: a channel from the agent's container to the
judge's that two containers do not close (the kernel counts POSIX message queues per uid).
`trial_outcomes(results)` reads every trial of a results folder back from its event log."""

from __future__ import annotations

import contextlib
import fcntl
import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.sandbox import SandboxConfig
from bench.sandbox.docker import DockerSandbox, dockerpy


def tracked(cfg: SandboxConfig, **changes: Any) -> SandboxConfig:
    return cfg.model_copy(update={"check_cache": True, "reuse": True, **changes})


def _client() -> Any:
    return dockerpy().from_env()


def behind_the_harness(box: DockerSandbox, cmd: str, detach: bool = False, judge: bool = False) -> str:
    """Run `cmd` in the agent's container (or the judge's) as the agent's uid, without the sandbox knowing."""
    from bench.sandbox.judge import AGENT_UID

    api = _client().api
    exec_id = api.exec_create(
        box.judge_container_id if judge else box.container_id,
        ["sh", "-c", cmd],
        workdir="/work",
        user=f"{AGENT_UID}:{AGENT_UID}",
    )["Id"]
    out = api.exec_start(exec_id, detach=detach)
    return "" if detach else out.decode("utf-8", "replace")


# The agent's uid is the same kernel uid in every container (no user namespace), and the kernel
# counts the bytes of its POSIX message queues per uid across all of them (RLIMIT_MSGQUEUE, 800 KiB:
# nine default queues): queues a command of the agent's leaves in its own container's /dev/mqueue
# (they outlive the process, until the container goes) leave a check in the judge's container
# no room for one. A file in /tmp no longer reaches a check (docs/threat_model.md).
FILL_QUEUES = (
    "python3 -c 'import ctypes, os\nc = ctypes.CDLL(None)\ni = 0\n"
    'while c.mq_open(b"/fill%d" % i, os.O_CREAT | os.O_RDWR, 0o600, None) >= 0:\n    i += 1\n'
    'print("queues", i)\''
)
_ROOM = (
    "import ctypes, os\n\n\ndef room():\n    c = ctypes.CDLL(None)\n"
    '    name = b"/room%d" % os.getpid()\n'
    "    fd = c.mq_open(name, os.O_CREAT | os.O_RDWR, 0o600, None)\n"
    "    if fd < 0:\n        return False\n    os.close(fd)\n    c.mq_unlink(name)\n    return True\n"
)
# add() is right while the agent's uid has room for a message queue (one made and removed again:
# nothing left in /dev/mqueue), wrong once a command of the agent's took the room.
QUEUE_FLIP = _ROOM + "\n\ndef add(a, b):\n    return a + b if room() else a - b\n"


@contextlib.contextmanager
def queue_quota() -> Iterator[None]:
    """The agent's uid's message queue room, to one test at a time (xdist's workers share the
    kernel): hold this around every sandbox of a test that fills it or reads it, up to their close."""
    with open(f"{tempfile.gettempdir()}/ctxbench-queue-quota.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def wait_for_queue_room(box: DockerSandbox, timeout_s: float = 20.0) -> None:
    """Until the uid has room for a queue again (a removed container's queues are freed with its
    IPC namespace, which the kernel may do a moment later)."""
    until = time.monotonic() + timeout_s
    while "True" not in behind_the_harness(box, f"python3 -c '{_ROOM}\nprint(room())'"):
        assert time.monotonic() < until, "the agent's uid has no room for a message queue"
        time.sleep(0.2)


def kill_container(container_id: str) -> None:
    """Kill it, and wait until the engine says it stopped (a moment after the kill returns)."""
    api = _client().api
    api.kill(container_id)
    until = time.monotonic() + 20
    while api.inspect_container(container_id)["State"]["Running"] and time.monotonic() < until:
        time.sleep(0.05)


def container_exists(container_id: str) -> bool:
    return any(
        c["Id"] == container_id for c in _client().api.containers(all=True, filters={"id": container_id})
    )


_VERDICTS = ("check", "invariant", "policy_violation")


@dataclass(frozen=True)
class TrialOutcome:
    """What must not depend on the check cache or on reuse (keyed by config hash)."""

    success: bool
    failure_reason: str
    steps_passed: int
    final_tree_sha: str
    turns: int
    verdicts: tuple[str, ...]  # every check, invariant and policy_violation event, without seq and timings


def trial_outcomes(results: Path) -> tuple[dict[str, TrialOutcome], int, int]:
    """Every trial under `results/trials`, by config hash; with the number of `check_cached`
    events and of trials that ran in a renewed sandbox."""
    out, cached, reused = {}, 0, 0
    for path in sorted(results.glob("trials/*/events.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        (start,) = [r for r in records if r["kind"] == "trial_start"]
        (end,) = [r for r in records if r["kind"] == "trial_end"]
        verdicts = tuple(
            json.dumps({k: v for k, v in r.items() if k not in ("seq", "prev", "t")}, sort_keys=True)
            for r in records
            if r["kind"] in _VERDICTS
        )
        assert start["config_hash"] not in out, f"two trials of config {start['config_hash']}"
        out[start["config_hash"]] = TrialOutcome(
            end["success"],
            end["failure_reason"],
            end["steps_passed"],
            end["final_tree_sha"],
            end["turn"],
            verdicts,
        )
        cached += sum(r["kind"] == "check_cached" for r in records)
        reused += bool(end["t"].get("sandbox_reused"))
    return out, cached, reused
