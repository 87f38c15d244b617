"""The Docker engine as the docker backend talks to it: docker-py imported on first use, one
client per process with a finite timeout, the retry-once policy for a hung engine call, the
exec stream (opened on a raw socket) and its demultiplexer, a container's CPU time, the owner
labels that let a sweep tell containers of dead harness processes from live ones, and the sweep.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import socket
import struct
import time
from collections.abc import Mapping
from typing import Any

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from bench.core import procs

from .base import OutputTail, SandboxLost
from .content import remove_tree

# Where a sandbox's git dir lives in memory (bench/accel/scratch.py, with sandbox.fast_git):
# named after the sandbox's dir, so a sweep that finds a leaked sandbox dir removes it too.
MEMORY_FS = "/dev/shm"


def leaked_git_root(sandbox_dir: str, memory_fs: str = MEMORY_FS) -> str:
    """Where the git dir of a (leaked) sandbox dir is, if it went to memory."""
    return os.path.join(memory_fs, f"{os.path.basename(sandbox_dir)}-git")


# The docker backend's logger name, as before the split, so log filters and captures on it
# still see the retry warnings.
log = logging.getLogger("bench.sandbox.docker")

# An engine call that has not answered in this long is taken as hung: it is retried once,
# then the sandbox is lost (other harnesses see ~1 hang per 1,000 Docker calls). Exec
# output is not bound by this: a running command is governed by its own timeout.
ENGINE_TIMEOUT_S = 30.0
_clients: dict[int, Any] = {}


# How long an ended exec's stream may precede the engine's record of its exit code.
EXIT_RECORD_WAIT_S = 30.0


def recorded_exit(inspect: Any, exec_id: str) -> int:
    """The exit code the engine records for an exec whose stream has ended, or -1 if none comes.
    A deadline, not a count of polls: 400 polls of 5 ms gave up after ~2 s on an engine loaded by
    other studies, and that -1 made a clean sandbox's probe look dirty (reuse's `after_check`)."""
    deadline, pause = time.monotonic() + EXIT_RECORD_WAIT_S, 0.005
    while True:
        info = inspect()
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        if time.monotonic() >= deadline:
            log.warning(
                "exec %s: the engine recorded no exit within %.0f s", exec_id[:12], EXIT_RECORD_WAIT_S
            )
            return -1
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def dockerpy() -> Any:
    """docker-py, imported on first use. Through importlib because, to mypy, the repo's own
    docker/ directory (the Dockerfile) is a namespace package that shadows docker-py."""
    return importlib.import_module("docker")


def _client() -> Any:
    """One docker client per process (a forked worker must not share the parent's sockets)."""
    docker = dockerpy()
    pid = os.getpid()
    if pid not in _clients:
        try:
            client = docker.from_env(timeout=int(ENGINE_TIMEOUT_S))
            client.ping()
        except docker.errors.DockerException as e:
            raise SandboxLost(f"Docker engine unreachable ({e}); run scripts/ensure_docker.sh") from e
        _clients.clear()
        _clients[pid] = client
    return _clients[pid]


def _engine_errors() -> tuple[type[BaseException], ...]:
    import requests

    return (dockerpy().errors.DockerException, requests.exceptions.RequestException, OSError)


def _hung(e: BaseException) -> bool:
    """Did the engine fail to answer in time (as opposed to answering with an error)?"""
    import requests

    return isinstance(e, requests.exceptions.Timeout | TimeoutError) or "timed out" in str(e).lower()


def _retry_once(what: str, call: Any, before_retry: Any = None) -> Any:
    """Run an engine call; if it hangs (times out), run `before_retry` and try once more."""

    def hung(e: BaseException) -> bool:
        return isinstance(e, _engine_errors()) and _hung(e)

    def warn(rs: RetryCallState) -> None:
        log.warning("docker %s hung (no answer in %.0f s): retrying once", what, ENGINE_TIMEOUT_S)
        if before_retry is not None:
            before_retry()

    return Retrying(
        retry=retry_if_exception(hung), stop=stop_after_attempt(2), before_sleep=warn, reraise=True
    )(call)


def owner_labels() -> dict[str, str]:
    """Who created a container: host, pid and the pid's start time (so a reused pid is not
    mistaken for the creator). A sweep removes a container only when that process is gone."""
    return {
        "ctxbench.host": os.uname().nodename,
        "ctxbench.pid": str(os.getpid()),
        "ctxbench.pid_start": str(procs.start_ticks(os.getpid()) or ""),
    }


def creator_alive(labels: Mapping[str, str]) -> bool | None:
    """True/False when the creating process is known to be alive/gone; None when it cannot be
    told (another host, or a container from before these labels existed)."""
    if labels.get("ctxbench.host") != os.uname().nodename or not labels.get("ctxbench.pid", "").isdigit():
        return None
    started = labels.get("ctxbench.pid_start", "")
    return procs.alive(int(labels["ctxbench.pid"]), int(started) if started.isdigit() else None)


_FRAME = struct.Struct(">BxxxL")  # docker multiplexed stream header: stream id, 3 pad, size


def _open_stream(api: Any, sock_path: str | None, exec_id: str) -> tuple[socket.socket, bytes]:
    """Start an exec attached and return its stream with the bytes already read past the
    response headers (docker-py's own socket drops them: docker/docker-py#3332)."""
    if sock_path is None:  # tcp/ssh engines: docker-py's socket (has the #3332 race)
        s = api.exec_start(exec_id, socket=True)
        return getattr(s, "_sock", s), b""
    body = b'{"Detach":false,"Tty":false}'
    head = (
        f"POST /v{api.api_version}/exec/{exec_id}/start HTTP/1.1\r\nHost: docker\r\n"
        "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(ENGINE_TIMEOUT_S)
        sock.connect(sock_path)
        sock.sendall(head + body)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk or len(buf) > 65536:
                raise ConnectionError("engine closed the exec stream before answering")
            buf += chunk
        header, rest = buf.split(b"\r\n\r\n", 1)
        status = header.split(b"\r\n", 1)[0].decode("latin-1")
        if status.split()[1:2] not in (["101"], ["200"]):
            raise ConnectionError(f"exec start refused: {status}: {rest[:300]!r}")
        return sock, rest
    except BaseException:
        sock.close()
        raise


def _pump(sock: socket.socket, first: bytes, tail: OutputTail, deadline: float) -> tuple[bool, bytes]:
    """Demultiplex the exec stream until EOF (True) or the deadline (False): stdout frames go
    to `tail`, stderr frames (only the wrapper and the judge write there) are returned, capped."""
    pending, err = bytearray(first), bytearray()
    while True:
        while len(pending) >= _FRAME.size:
            stream, size = _FRAME.unpack_from(pending)
            if len(pending) < _FRAME.size + size:
                break
            chunk = bytes(pending[_FRAME.size : _FRAME.size + size])
            if stream == 2 and len(err) < 1 << 20:  # the wrapper's lines and the judge's report
                err += chunk
            else:
                tail.feed(chunk)
            del pending[: _FRAME.size + size]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False, bytes(err)
        sock.settimeout(remaining)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            return False, bytes(err)
        if not data:
            return True, bytes(err)
        pending += data


def container_cpu_s(container_id: str) -> float | None:
    """CPU seconds the container's processes used so far, from its cgroup (None if unreadable)."""
    for path in (
        f"/sys/fs/cgroup/cpuacct/docker/{container_id}/cpuacct.usage",  # v1, cgroupfs driver
        f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/cpu.stat",
    ):  # v2, systemd driver
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        return cgroup_cpu_s(text)
    return None


def cgroup_cpu_s(text: str) -> float:
    """CPU seconds in a cgroup's accounting file: v1 `cpuacct.usage` (ns) or v2 `cpu.stat` (usage_usec)."""
    return (int(text) if text.strip().isdigit() else 1000 * int(text.split("usage_usec")[1].split()[0])) / 1e9


def _unix_socket_path() -> str | None:
    host = os.environ.get("DOCKER_HOST", "")
    if not host:
        return "/var/run/docker.sock"
    return host[len("unix://") :] if host.startswith("unix://") else None


def sweep(label_selector: Mapping[str, str] | None = None, orphans_only: bool = False) -> int:
    """Force-remove ctxbench containers (all, or those matching every label) and their leaked
    working copies; returns how many containers were removed. 0 if no engine is reachable.

    With no selector this removes EVERY ctxbench container on the engine, including those of
    studies running right now; `orphans_only=True` keeps any container whose creating process
    is alive or cannot be checked (another host, no owner labels): safe at any time."""
    try:
        client = _client()
    except SandboxLost as e:
        log.warning("sweep skipped: %s", e)
        return 0
    selector = ["ctxbench=1"] + [f"{k}={v}" for k, v in sorted((label_selector or {}).items())]
    removed = 0
    for c in client.api.containers(all=True, filters={"label": selector}):
        if orphans_only and creator_alive(c.get("Labels") or {}) is not False:
            continue
        try:
            client.api.remove_container(c["Id"], force=True)
            removed += 1
        except _engine_errors() as e:
            if type(e).__name__ != "NotFound":
                log.warning("sweep: could not remove %s: %s", c["Id"][:12], e)
            continue
        for m in c.get("Mounts") or []:  # a SIGKILLed harness leaves its temp dir behind too
            root = os.path.dirname(m.get("Source", ""))
            if m.get("Destination") == "/work" and os.path.basename(root).startswith("ctxbench-sbx-"):
                for path in (root, leaked_git_root(root)):
                    with contextlib.suppress(OSError):  # however deep or unreadable (content.py)
                        remove_tree(path)
    return removed
