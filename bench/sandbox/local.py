"""UNSAFE local backend: commands run as plain host subprocesses in the trial's working copy.

There is no isolation at all: no network, memory, cpu or pids limits, and the code runs
with the harness's own privileges and filesystem view. It exists so the harness can be
debugged on a machine without Docker, with the `sim`/`oracle` models whose "generated code"
is known. Never the default; never use it with a real model.

What it does keep from the contract: the same host-side working copy and out-of-tree git
dir (workcopy.py), the per-command timeout (the whole process session is SIGKILLed, plus any
process that escaped it, found by an env marker), `reap` (every process carrying this
sandbox's env marker; one that cleared its environment escapes it: no isolation), merged and
tail-truncated output, and an environment stripped of the host's variables so API keys do
not leak into the commands.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .base import ExecResult, Mount, OutputTail, SandboxConfig, WorkingCopy, exec_limit
from .judge import fill

log = logging.getLogger(__name__)

_MARK = "CTXBENCH_EXEC"
_SESSION = "CTXBENCH_SANDBOX"
DRAIN_S = 2.0  # after the shell exits, how long background jobs may still write to the output


class LocalSandbox(WorkingCopy):
    """UNSAFE: runs commands directly on the host. See the module docstring."""

    agent_uid: int | None = None  # no separation: judge and judged are the harness's user

    def __init__(
        self,
        cfg: SandboxConfig,
        files: Mapping[str, str],
        trial_id: str,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(trial_id, files, track=cfg.check_cache or cfg.reuse, fast_git=cfg.fast_git)
        self._cfg = cfg
        self._home = self._root / "home"  # outside the working copy, so nothing lands in the tree
        self._home.mkdir()
        self._session = uuid.uuid4().hex  # tags every process of this sandbox, for close()
        log.warning(
            "sandbox %s: kind=local runs model-generated code on the HOST without any "
            "isolation (UNSAFE; debugging only)",
            trial_id,
        )

    def _env(self, marker: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        # The harness's own interpreter first on PATH, so `python -m pytest` works like in the image.
        path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", os.defpath)])
        return {
            "PATH": path,
            "HOME": str(self._home),
            "TMPDIR": str(self._home),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            **(extra or {}),
            _MARK: marker,
            _SESSION: self._session,
        }  # the marks last: they are how the reap finds the exec's processes

    def judge_copy(self, entries: Mapping[str, tuple[str, bytes]]) -> str:
        return str(fill(self._root / "judge", entries))

    def exec(
        self,
        cmd: str,
        timeout: float | None = None,
        reap: bool = False,
        judge: bool = False,
        probe: bool = False,
        env: Mapping[str, str] | None = None,
        output_limit_chars: int | None = None,
    ) -> ExecResult:
        """`judge`: fd 3 is a file outside the working copy, read back as the report (no
        separation here: the local sandbox isolates nothing). `probe`: none here (`_probe`);
        the exec's own reap is all a check can leave that this sandbox sees."""
        limit = exec_limit(self._cfg, self.trial_id, self._closed, cmd, timeout, env, judge)
        self._ran(reap)  # taints the sandbox (a check settles it: pristine.py); no probe here
        self._execs += 1
        marker = uuid.uuid4().hex
        tail = OutputTail(output_limit_chars or self._cfg.output_limit_chars)
        start = time.monotonic()
        deadline = start + limit
        # The judge's channel reaches fd 3 as the Docker judge's does (judge.py): the shell's stderr,
        # moved to 3 by the shell itself. Not `pass_fds=(3,)` with a dup in `preexec_fn`: that
        # names the *parent's* fd 3, which another trial's thread may close between this Popen's
        # pipes and its fork (the child then fails with EBADF), and preexec_fn is unsafe with threads.
        channel = tempfile.TemporaryFile() if judge else None
        prefix = "exec 3>&2 2>&1\n" if channel is not None else "exec 2>&1\n"
        proc = subprocess.Popen(
            ["sh", "-c", prefix + cmd],
            cwd=self.workdir,
            env=self._env(marker, env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=channel if channel is not None else subprocess.STDOUT,
            start_new_session=True,
        )  # its own process group, killable as one
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        timed_out = False
        drain_until = deadline
        try:
            while True:
                remaining = drain_until - time.monotonic()
                if remaining <= 0:
                    timed_out = drain_until == deadline
                    break
                # Poll the shell's exit too: a background job can hold stdout open forever.
                if not select.select([fd], [], [], min(remaining, 0.1))[0]:
                    if drain_until == deadline and proc.poll() is not None:
                        # Like the Docker engine: stop reading shortly after the command exits.
                        drain_until = min(deadline, time.monotonic() + DRAIN_S)
                    continue
                data = os.read(fd, 65536)
                if not data:
                    break
                tail.feed(data)
            if not timed_out:
                try:  # stdout closed, but the shell itself may still run (`exec >&-; sleep 99`)
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            if timed_out:
                _kill(proc.pid, f"{_MARK}={marker}")
            proc.stdout.close()
            proc.wait()
        duration = time.monotonic() - start
        code = 137 if timed_out else proc.returncode
        ended = tuple(_kill(None, f"{_SESSION}={self._session}")) if reap else ()
        report = ""
        if channel is not None:
            with channel:
                channel.seek(0)
                report = channel.read(1 << 20).decode("utf-8", "replace")
        return ExecResult(128 - code if code < 0 else code, tail.text(), duration, timed_out, ended, report)

    def reap(self) -> list[str]:
        ended = _kill(None, f"{_SESSION}={self._session}")
        self._unsettled = False
        return ended

    def _probe(self) -> str | None:
        """No state outside the working copy can be probed on the host: only processes count."""
        ended = self.reap()
        return f"(processes were left: {uuid.uuid4().hex})" if ended else None

    def identity(self) -> dict[str, Any]:
        """For the check cache's key: the host's interpreter runs the checks here."""
        return {"kind": "local", "python": sys.version, "executable": sys.executable, **self._cfg.limits()}

    def close(self, interrupted: bool = False) -> None:
        """Kill whatever the commands left running (background jobs), then remove the copy."""
        if not self._closed:
            _kill(None, f"{_SESSION}={self._session}")
        super().close(interrupted)


def _kill(pgid: int | None, env_entry: str) -> list[str]:
    """SIGKILL the group and every process carrying `env_entry`; returns "pid name" of those."""
    if pgid is not None:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    # Children that called setsid() left the group; they still carry the env marker. A fork
    # bomb keeps making new ones: sweep until a pass finds none.
    needle = env_entry.encode()
    ended: list[str] = []
    for _ in range(50):
        found = 0
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    name, state = (entry / "comm").read_text().strip(), _state(entry)
                    os.kill(int(entry.name), signal.SIGKILL)
                    found += 1
                    if state != "Z":  # a zombie was already dead (its environ reads empty, usually)
                        ended.append(f"{entry.name} {name}")
            except (OSError, ValueError):
                continue
        if not found:
            break
        time.sleep(0.01)
    return sorted(set(ended))


def _state(entry: Path) -> str:
    try:
        return (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def create(
    cfg: SandboxConfig,
    files: Mapping[str, str],
    trial_id: str,
    labels: Mapping[str, str] | None = None,
    mounts: tuple[Mount, ...] = (),
) -> LocalSandbox:
    if mounts:  # nothing to mount into: the local sandbox is the host
        raise ValueError(
            "sandbox=local cannot mount an agent's folders (it isolates nothing); "
            "run an agent that runs in the sandbox with sandbox=docker"
        )
    return LocalSandbox(cfg, files, trial_id, labels)
