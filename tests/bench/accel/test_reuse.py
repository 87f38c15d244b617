"""Sandbox reuse attacked through the real Docker sandbox (bench/accel/pool.py, `renew` in
workcopy.py, pristine.py): a worker hands its last sandbox to its next trial only when no command
of the agent's ran in it and nothing was left outside the working copy; the next trial then sees
exactly its own task's files and history, as in a new sandbox. Anything else removes the
container, as without reuse. `behind_the_harness` plays whatever the tracking could have missed."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from bench.accel import pool
from bench.sandbox import SandboxConfig, create
from bench.sandbox.docker import DockerSandbox
from bench.sandbox.workcopy import GitError
from tests.helpers.pristine import behind_the_harness, container_exists, kill_container, tracked

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_ready")]

FILES_A = {"README.md": "# a\n", "pkg/__init__.py": "", "pkg/core.py": "def add(a, b):\n    return a + b\n"}
FILES_B = {"README.md": "# b\n", "lib/util.py": "X = 1\n", "tests/test_util.py": "def test_x():\n    pass\n"}


@pytest.fixture
def cfg(sandbox_cfg: SandboxConfig) -> SandboxConfig:
    return tracked(sandbox_cfg)


@pytest.fixture
def labels() -> dict[str, str]:
    return {"ctxbench.study": f"reuse-{uuid.uuid4().hex[:8]}"}


class Maker:
    """`make` for pool.acquire: the real create, counted (the `make` fixture closes them all)."""

    def __init__(self) -> None:
        self.made: list[DockerSandbox] = []

    def __call__(self, *a: Any, **k: Any) -> DockerSandbox:
        box = create(*a, **k)
        assert isinstance(box, DockerSandbox)
        self.made.append(box)
        return box


@pytest.fixture
def make() -> Iterator[Maker]:
    maker = Maker()
    yield maker
    pool.close_all()
    for box in maker.made:
        box.close()


def checked(box: DockerSandbox, clean: bool = True) -> None:
    """A check that leaves nothing, as certify runs one: the probe before the first check is the
    reference; after it, the sandbox is pristine again if it was."""
    was, state = box.pristine, box.state_sha()
    box.before_check()
    res = box.exec("python3 -c 'print(1)'", reap=True, judge=True, probe=was)
    assert box.after_check(was, state, res.ended, res.probe) is clean and box.pristine is clean


def entries(box: DockerSandbox) -> set[str]:
    """Every file, link and directory below the working copy, on the host."""
    out = set()
    for top, dirs, files in os.walk(box.workdir):
        rel = os.path.relpath(top, box.workdir)
        out |= {n if rel == "." else f"{rel}/{n}" for n in dirs + files}
    return out


def referenced(box: DockerSandbox) -> None:
    """The probe a first check would take as its reference, with no check (no code) run: a
    sandbox whose every check was a cache hit, the only kind that goes to the next trial."""
    box.before_check()
    assert box._tracker._pristine.reference is not None and box.reusable


def test_a_renewed_sandbox_has_exactly_the_new_tasks_files_and_a_fresh_history(cfg, labels, make):
    a = pool.acquire(cfg, FILES_A, "trial-a", labels, make=make)
    referenced(a)
    a.write_file("pkg/core.py", "def add(a, b):\n    return b + a\n")  # the agent's work, committed
    old = a.commit("agent work", "Agent <agent@example.com>")
    for junk in ("pkg/__pycache__", "build/empty"):  # what a build leaves, ignored by git or empty
        os.makedirs(a.workdir / junk)
    (a.workdir / "pkg/__pycache__/core.cpython-311.pyc").write_bytes(b"\x00")
    os.symlink("pkg/core.py", a.workdir / "link.py")
    assert a.pristine
    pool.release(a, cfg, labels)
    assert pool.idle() == 1 and container_exists(a.container_id)
    b = pool.acquire(cfg, FILES_B, "trial-b", labels, make=make)
    assert b is a and len(make.made) == 1 and b.trial_id == "trial-b"
    fresh = create(cfg, FILES_B, "trial-fresh")
    try:
        assert entries(b) == entries(fresh) == set(FILES_B) | {"lib", "tests"}
        assert (b.base_commit, b.tree_sha()) == (fresh.base_commit, fresh.tree_sha())
        assert b.git("log", "--format=%s").splitlines() == ["initial task files"]
        with pytest.raises(GitError):
            b.git("cat-file", "-e", old)
        assert b.cost()["trials"] == 2 and b.pristine
        seen = b.exec("find /work -mindepth 1 | sort").output.split()  # the container's mount, too
        assert seen == sorted(f"/work/{p}" for p in entries(fresh))
    finally:
        fresh.close()


def test_a_sandbox_the_agent_ran_a_command_in_is_removed_not_handed_on(cfg, labels, make):
    a = pool.acquire(cfg, FILES_A, "trial-a", labels, make=make)
    checked(a)
    a.exec("true", reap=True)  # the `run` tool: whatever it was, even what no probe sees, taints for good
    checked(a, clean=False)  # and no clean check after it makes it pristine again
    pool.release(a, cfg, labels)
    assert pool.idle() == 0 and not container_exists(a.container_id)
    # why it was not kept outlives the close: the log and a test's failure say it, not "closed"
    assert a.not_pristine_because == "a command of the agent's ran"
    b = pool.acquire(cfg, FILES_B, "trial-b", labels, make=make)
    assert b is not a and len(make.made) == 2 and b.pristine


LEFT = {
    "a file in /tmp": "touch /tmp/left",
    "a file in /dev/shm": "touch /dev/shm/left",
    "a file in /tmp written again": "touch /tmp/there",  # there at the first probe: its change time moved
    "a running process": "setsid sleep 60 >/dev/null 2>&1 &",
}


# Both containers go to the next trial with a reused sandbox (the judge's only where no check ran
# code in it: test_a_sandbox_a_check_ran_code_in_goes_to_no_other_trial), so renew probes both.
@pytest.mark.parametrize("judge", [False, True], ids=["agent's container", "judge's container"])
@pytest.mark.parametrize("left", list(LEFT))
def test_renew_refuses_what_was_left_outside_the_working_copy_and_the_container_goes(
    cfg, labels, make, left, judge
):
    a = pool.acquire(cfg, FILES_A, "trial-a", labels, make=make)
    behind_the_harness(a, "touch /tmp/there", judge=judge)
    referenced(a)
    behind_the_harness(a, LEFT[left], judge=judge)
    assert a.pristine, "the tracking missed it: renew's own probe must find it"
    pool.release(a, cfg, labels)
    assert pool.idle() == 1
    b = pool.acquire(cfg, FILES_B, "trial-b", labels, make=make)
    assert b is not a and len(make.made) == 2 and b.pristine
    assert not container_exists(a.container_id) and not a.workdir.exists()
    assert a._judge_id is not None and not container_exists(a._judge_id)


# -- what a check leaves in the container's namespaces (issue 42) ------------------------------
# A check runs the agent's code. Trial 1's moves the pid counter and the loopback's counters,
# which no probe can put back; trial 2's reads them: a message from one trial to the next.
SEND = (
    'python3 -c "import os, socket\n'
    "for _ in range(500):\n    pid = os.fork()\n    os._exit(0) if pid == 0 else os.waitpid(pid, 0)\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "[s.sendto(b'x' * 1000, ('127.0.0.1', 9)) for _ in range(200)]\""
)
READ = "cat /proc/sys/kernel/ns_last_pid; awk '/lo:/{print $2}' /proc/net/dev"


def _message(cfg, labels, make) -> tuple[DockerSandbox, DockerSandbox, str, list[int]]:
    """Trial 1's check sends; trial 2's check reads: (trial 1's sandbox, trial 2's, why trial 2's
    is not pristine before it read, what it read)."""
    a = pool.acquire(cfg, FILES_A, "trial-1", labels, make=make)
    was, state = a.pristine, a.state_sha()
    a.before_check()
    res = a.exec(SEND, reap=True, judge=True, probe=was)
    assert res.exit_code == 0, res.output
    a.after_check(was, state, res.ended, res.probe)
    assert a.pristine, "the probe sees nothing of it: only refusing reuse keeps it from trial 2"
    pool.release(a, cfg, labels)
    b = pool.acquire(cfg, FILES_B, "trial-2", labels, make=make)
    why = b.not_pristine_because
    read = [int(x) for x in b.exec(READ, reap=True, judge=True).output.split()]
    return a, b, why, read


def test_a_sandbox_a_check_ran_code_in_goes_to_no_other_trial(cfg, labels, make):
    a, b, _, (last_pid, lo_bytes) = _message(cfg, labels, make)
    assert b is not a and not container_exists(a.container_id)
    assert last_pid < 500 and lo_bytes < 200_000, "trial 2 read trial 1's message"
    assert a.not_reusable_because.startswith("a check ran the agent's code here")


def test_without_the_refusal_the_next_trial_reads_the_message_and_caches_nothing(
    cfg, labels, make, monkeypatch
):
    """The guard removed (a pristine sandbox is reusable, as before issue 42): trial 2 reads what
    trial 1's check left, which the probe missed; the check cache still refuses trial 2's verdicts."""
    monkeypatch.setattr(DockerSandbox, "reusable", property(lambda self: self.pristine))
    a, b, why, (last_pid, lo_bytes) = _message(cfg, labels, make)
    assert b is a and last_pid >= 500 and lo_bytes >= 200_000  # the message got through
    # so no verdict of it is looked up or stored
    assert why == "a check of an earlier trial ran its code here"


@pytest.mark.parametrize("after_a_check", [False, True])
def test_renew_itself_refuses_a_sandbox_the_agent_ran_a_command_in(cfg, make, after_a_check):
    """Whatever the pool decides: the sandbox checks its own flag, with or without a reference."""
    a = make(cfg, FILES_A, "trial-a")
    if after_a_check:
        checked(a)
    a.exec("true", reap=True)
    with pytest.raises(RuntimeError, match="not as the harness left it"):
        a.renew("trial-b", FILES_B)
    assert a.trial_id == "trial-a" and a.list_files() == sorted(FILES_A)


@pytest.mark.parametrize("judge", [False, True], ids=["agent's container", "judge's container"])
def test_a_sandbox_whose_container_died_is_replaced(cfg, labels, make, judge):
    a = pool.acquire(cfg, FILES_A, "trial-a", labels, make=make)
    pool.release(a, cfg, labels)
    kill_container(a.judge_container_id if judge else a.container_id)
    b = pool.acquire(cfg, FILES_B, "trial-b", labels, make=make)
    assert b is not a and not container_exists(a.container_id) and b.list_files() == sorted(FILES_B)
    assert a._judge_id is None or not container_exists(a._judge_id)


def test_an_interrupted_trials_sandbox_is_removed_even_when_pristine(cfg, labels, make):
    a = pool.acquire(cfg, FILES_A, "trial-a", labels, make=make)
    assert a.pristine
    pool.release(a, cfg, labels, interrupted=True)
    assert pool.idle() == 0 and not container_exists(a.container_id)


def test_a_sandbox_goes_only_to_the_same_study_and_config_and_never_leaks(cfg, labels, make):
    a = pool.acquire(cfg, FILES_A, "trial-a", labels, make=make)
    pool.release(a, cfg, labels)
    other_study = pool.acquire(cfg, FILES_B, "trial-b", {"ctxbench.study": "another"}, make=make)
    other_cfg = pool.acquire(tracked(cfg, memory="256m"), FILES_B, "trial-c", labels, make=make)
    assert len(make.made) == 3 and a not in (other_study, other_cfg) and pool.idle() == 1
    pool.release(other_cfg, tracked(cfg, memory="256m"), labels)
    pool.release(other_study, cfg, labels)  # the slot's idle sandbox is replaced, and removed
    assert pool.idle() == 2 and not container_exists(a.container_id)
    off = tracked(cfg, reuse=False)
    c = pool.acquire(off, FILES_A, "trial-d", labels, make=make)
    pool.release(c, off, labels)
    assert not container_exists(c.container_id), "reuse off: every sandbox is removed"
    pool.close_all()
    assert pool.idle() == 0 and not any(container_exists(b.container_id) for b in make.made)


def test_an_interrupt_while_renewing_removes_the_sandbox(cfg, labels, make, monkeypatch):
    a = pool.acquire(cfg, FILES_A, "trial-a", labels, make=make)
    pool.release(a, cfg, labels)

    def interrupted(files: object) -> None:  # the signal lands after the working copy was emptied
        raise KeyboardInterrupt("signal 15")

    monkeypatch.setattr(a, "_init_repo", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pool.acquire(cfg, FILES_B, "trial-b", labels, make=make)
    assert pool.idle() == 0 and not container_exists(a.container_id) and not a.workdir.exists()


def test_the_first_probe_waits_for_pid_1_to_finish_starting(cfg, monkeypatch):
    """A container's pid 1 that is still starting when the first probe runs (a loaded machine)
    must not make the reference differ from every later probe: the sandbox would lose its
    pristine state without anything of the agent's having run. Here pid 1 starts slowly on
    purpose: it sleeps, then grows by 8 MB, then becomes the reaper."""
    import bench.sandbox.docker as docker_backend

    slow = "import time\ntime.sleep(1.5)\nballast = bytearray(8 << 20)\n" + docker_backend._INIT
    monkeypatch.setattr(docker_backend, "_INIT", slow)
    box = create(cfg, FILES_A, "slow-pid1")
    try:
        first = box._probe()
        time.sleep(2.0)  # past pid 1's start, whenever the first probe ran
        assert first == box._probe(), "the first probe was taken before pid 1 was asleep"
    finally:
        box.close()


def test_a_check_in_a_pristine_sandbox_costs_one_exec_its_probe_included(cfg, make):
    box = make(cfg, FILES_A, "one-exec")
    checked(box)  # the first takes the reference in an exec of its own
    before = box.cost()["execs"]
    checked(box)
    assert box.cost()["execs"] == before + 1 and box.pristine
    with pytest.raises(ValueError, match="probe=True needs judge=True"):
        box.exec("true", probe=True)  # the probe is the judge's: never on an agent's exec


# What a check can leave to make the probe that follows it read as something it is not.
BENT = {
    # past PROBE_LIMIT: the head cuts the end line off, so the probe counts as failed, not cut short
    "a probe past its bound": "i=0; while [ $i -lt 1200 ]; do : > /tmp/$(printf %0240d $i); i=$((i+1)); done",
    "a name holding the probe's end line": "touch \"/tmp/x$(printf '\\nctxbench-probe-end')\"",
    # \r and \x1c split a line for str.splitlines(), never for the channel's reader
    "a name holding a report line": "touch \"/tmp/x$(printf '\\rreport {}\\034ended 1 y')\"",
}


@pytest.mark.parametrize("bent", list(BENT))
def test_nothing_a_check_leaves_makes_its_probe_read_as_clean(cfg, make, bent):
    box = make(cfg, FILES_A, "bent")
    checked(box)
    was, state = box.pristine, box.state_sha()
    box.before_check()
    res = box.exec(BENT[bent], reap=True, judge=True, probe=was)
    assert res.exit_code == 0 and res.report == "" and not res.ended, res.output
    assert res.probe is not None and res.probe != box._tracker._pristine.reference
    if bent == "a probe past its bound":
        assert res.probe.startswith("(probe failed: ")
    else:
        assert "/tmp/x" in res.probe, "the probe lost the name the check left"
    assert box.after_check(was, state, res.ended, res.probe) is False and not box.pristine
