"""Docker backend: one long-lived, locked-down container per trial; commands run via exec.

The container sees only the trial's working copy (bind-mounted at /work; the git dir stays on
the host, see workcopy.py), read-only at /judge the hidden checks' channel, and read-only
the folders an external agent's player asks for (base.Mount: its install, the proxy's socket); no
network, capped memory/cpu/pids, no privilege escalation, a read-only rootfs with a tmpfs /tmp.
Every exec of the judge's (a certification, a probe) runs in a second container, the judge's,
started with the first of them and made the same way (image, limits, hostname, /judge), but with
the judge's copy of the tree read-only at /work instead of the working copy: the code under test
runs at the agent's path and cannot tell the judge's run from the agent's by it (judge.py,
issue 42); the agent's processes share no pid namespace with it either. It has limits of its
own: while a check runs, what the agent left in its container's /tmp and /dev/shm still counts
there, so a trial may hold up to twice `sandbox.memory` (the agent's processes are reaped first).
A verdict counts only while the agent's container runs: `reap` (before every certification)
and `_exec` (after every exec of the judge's) check it, else SandboxLost (issue 42).
Agent commands run as an unprivileged uid without capabilities; pid 1, every exec's wrapper and
every certification as the container's root, holding only CAP_SETUID/SETGID/CHOWN/KILL (judge.py).
Its pid 1 is a tiny reaper that ignores every signal (a namespace's init cannot be killed from
inside), so the judge's `kill -9 -1` ends every other process, never the container.

`exec(..., reap=True)` ends whatever the command left running (background jobs, daemons,
fork bombs) before it returns, from the exec's own shell, and lists them in
`ExecResult.ended`; `reap()` does the same on its own, and costs nothing when the last exec
already reaped (the trial runs one exec at a time, so nothing can have started since).

Speed: an exec is three engine round trips (create, start, inspect) on one reused client,
like the `docker exec` CLI. The start request is sent on a raw unix socket (engine.py) because
docker-py reads upgraded streams past its own HTTP buffer and can silently lose the first
output frames (docker/docker-py#3332); there the bytes after the response headers are kept.
`docker` is imported lazily so that importing bench never needs docker-py or an engine.
engine.py owns the engine connection, hung-call retries, owner labels and `sweep` (re-exported).
"""

from __future__ import annotations

import logging
import re
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.core.outcomes import TrialFailed, failure

from .base import ExecResult, Mount, OutputTail, SandboxConfig, SandboxLost, exec_limit
from .engine import (
    _client,
    _engine_errors,
    _open_stream,
    _pump,
    _retry_once,
    _unix_socket_path,
    container_cpu_s,
    dockerpy,
    owner_labels,
    recorded_exit,
)
from .engine import creator_alive as creator_alive  # re-exported: used through this module
from .engine import sweep as sweep
from .judge import (
    AGENT_UID,
    JUDGE_MOUNT,
    JUDGED_AT,
    PROBE,
    PROBE_S,
    REAP,
    JudgeCopy,
    agent_argv,
    give_to_agent,
    judge_argv,
    probe_failed,
    probed,
)
from .workcopy import WorkingCopy

log = logging.getLogger(__name__)

GRACE_S = 2.0  # host-side guard: how long past the in-container timeout we keep waiting
_PROBE_FAILED = probe_failed().split(":")[0]  # how judge.probe_failed() starts
_MARK = "CTXBENCH_EXEC"  # env var tagging every process of one exec (its create is retried by it)
_SENTINEL = b"\0ctxbench-exec-completed\n"
_PID1_OOM: list[bool | None] = [None]  # may this engine set oom_score_adj -1000? (None: not tried yet)
# pid 1: ignores every signal it may (init of a pid namespace: SIGKILL from inside is dropped
# too), and SIGCHLD ignored makes the kernel reap orphans, so zombies never eat the pids limit.
_INIT = (
    "import signal\n"
    "for s in signal.valid_signals():\n"
    "    try: signal.signal(s, signal.SIG_IGN)\n"
    "    except (OSError, ValueError): pass\n"
    "while True: signal.pause()\n"
)


class DockerSandbox(WorkingCopy):
    """A trial's sandbox: host working copy + container. See the module docstring."""

    agent_uid: int | None = AGENT_UID

    def __init__(
        self,
        cfg: SandboxConfig,
        files: Mapping[str, str],
        trial_id: str,
        labels: Mapping[str, str] | None = None,
        mounts: Sequence[Mount] = (),
    ) -> None:
        super().__init__(trial_id, files, track=cfg.check_cache or cfg.reuse, fast_git=cfg.fast_git)
        self._cfg = cfg
        # an external agent's folders, read-only (base.Mount); () for the own loop
        self.mounts = tuple(mounts)
        # the hidden checks' channel (hidden_checks.py), /judge in both containers
        self._channel = self._root / "judge"
        self._channel.mkdir(mode=0o755)
        # the judge's copy of the tree, /work in the judge's container
        self._judge = JudgeCopy(self._root / "judged")
        self._labels = dict(labels or {})
        try:
            container = self._run_container(labels)
        except BaseException:
            self._remove_tree()
            raise
        self._id: str = container.id
        self._hostname = str((container.attrs.get("Config") or {}).get("Hostname") or "") or None
        self._judge_id: str | None = None  # the judge's container: started with the first judge's exec
        self._agent_probe = ""  # the agent's container's part of the last `_probe` (none yet)
        self._image_id = str(container.attrs.get("Image") or cfg.image)  # the content that runs
        self._quiet = True  # no command has run since the last reap
        self._api = _client().api
        self._sock_path = _unix_socket_path()
        log.debug("sandbox %s: container %s, workdir %s", trial_id, self._id[:12], self.workdir)

    def _run_container(self, labels: Mapping[str, str] | None, judge: bool = False) -> Any:
        """The agent's container, or (`judge`) the judge's: the same but for what is at /work (the
        judge's copy, read-only), the hostname (the agent's container's) and no agent's mounts."""
        docker = dockerpy()
        cfg = self._cfg
        client = _client()
        slug = re.sub(r"[^a-zA-Z0-9_.-]", "-", self.trial_id)[:40]
        tmp_b, shm_b = tmpfs_bytes(cfg.memory)
        role = {"ctxbench.role": "judge" if judge else "agent"}
        # This start's own mark: a retry removes only what this start may have made, never a
        # container of another sandbox of the same trial id (tests reuse ids across xdist workers).
        this_start = {"ctxbench.start": uuid.uuid4().hex}
        all_labels = {
            **(labels or {}),
            **owner_labels(),
            "ctxbench": "1",
            "ctxbench.trial": self.trial_id,
            **role,
            **this_start,
        }
        work = docker.types.Mount(
            target="/work",
            source=str(self._judge.tree if judge else self.workdir),
            type="bind",
            read_only=judge,
        )

        def remove_half_created() -> None:  # a hung create may still have made the container
            mine = [f"ctxbench.start={this_start['ctxbench.start']}"]
            for c in client.api.containers(all=True, filters={"label": mine}):
                client.api.remove_container(c["Id"], force=True)

        def start(protect: bool) -> Any:
            return _retry_once(
                "container start",
                lambda: client.containers.run(
                    cfg.image,
                    ["python3", "-I", "-S", "-c", _INIT],
                    detach=True,
                    name=f"ctxbench-{slug}-{'judge-' if judge else ''}{uuid.uuid4().hex[:8]}",
                    labels=all_labels,
                    **({"hostname": self._hostname} if judge and self._hostname else {}),
                    user="0:0",
                    working_dir="/work",  # the judge's: agent commands drop to AGENT_UID
                    network_mode="none",
                    mem_limit=cfg.memory,
                    memswap_limit=cfg.memory,
                    nano_cpus=int(cfg.cpus * 1e9),
                    pids_limit=cfg.pids_limit,
                    init=False,  # _INIT is pid 1 (see the module docstring); removal is a SIGKILL
                    # CAP_SETUID/SETGID to hand a command to the agent's uid, CHOWN to give it the copy,
                    # KILL to end the agent's processes from outside their uid (judge.py's REAP); no
                    # SYS_PTRACE or DAC_*. The agent's uid holds no capability at all.
                    cap_drop=["ALL"],
                    cap_add=["SETUID", "SETGID", "CHOWN", "KILL"],
                    security_opt=["no-new-privileges"],
                    # pid 1 out of the OOM killer's reach where the engine may grant it (it needs
                    # CAP_SYS_RESOURCE); the judge's shell puts each agent command first in line (judge.py).
                    **({"oom_score_adj": -1000} if protect else {}),
                    read_only=True,
                    tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={tmp_b},mode=1777"},
                    shm_size=shm_b,
                    mounts=[
                        work,
                        docker.types.Mount(
                            target=JUDGE_MOUNT, source=str(self._channel), type="bind", read_only=True
                        ),
                        *(
                            docker.types.Mount(
                                target=m.target, source=str(m.source), type="bind", read_only=True
                            )
                            for m in (() if judge else self.mounts)
                        ),
                    ],
                ),
                before_retry=remove_half_created,
            )

        try:
            protect = _PID1_OOM[0] is not False
            try:
                container = start(protect)
            except docker.errors.APIError:
                if not protect or _PID1_OOM[0] is not None:
                    raise
                remove_half_created()  # an engine without CAP_SYS_RESOURCE refuses -1000 (runc cannot write it)
                container = start(False)
                _PID1_OOM[0] = False
                log.warning(
                    "this Docker engine cannot keep pid 1 out of the OOM killer's reach "
                    "(oom_score_adj -1000 refused): a container the agent's code kills by memory "
                    "is the agent's failure (docs/threat_model.md)"
                )
            _PID1_OOM[0] = _PID1_OOM[0] if _PID1_OOM[0] is not None else protect
            return container
        except docker.errors.ImageNotFound as e:
            raise RuntimeError(
                f"sandbox image {cfg.image!r} not found; build it with `make docker` (scripts/build_image.sh)"
            ) from e
        except docker.errors.DockerException as e:
            raise SandboxLost(f"could not start the sandbox container: {e}") from e

    def _init_repo(self, files: Mapping[str, str]) -> None:  # a new sandbox's, or a renewed one's
        super()._init_repo(files)
        give_to_agent(self.workdir)

    @property
    def reusable(self) -> bool:
        """A sandbox with an agent's mounts is never handed on: the mounts are that trial's (pool.py)."""
        return not self.mounts and super().reusable

    @property
    def not_reusable_because(self) -> str:
        return "it holds an external agent's mounts" if self.mounts else super().not_reusable_because

    @property
    def container_id(self) -> str:
        return self._id

    @property
    def judge_container_id(self) -> str:
        """The judge's container's id (started now if it is not yet)."""
        return self._judge_container()

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
        self._ran(reap)  # taints the sandbox, whatever the command (a check settles it: pristine.py)
        self._quiet = False
        res = self._exec(cmd, timeout, reap, judge, probe, env, output_limit_chars)
        self._quiet = reap
        return res

    def judge_copy(self, entries: Mapping[str, tuple[str, bytes]]) -> str:
        self._judge.write(entries)
        return JUDGED_AT

    @property
    def judge_channel(self) -> tuple[Path, str]:
        """Where the hidden checks' channel lives: on the host, and as the judge's container sees it."""
        return self._channel, JUDGE_MOUNT

    def _judge_container(self) -> str:
        """The judge's container's id, started now if it is not yet (the cost of one container
        start, once per sandbox: bench/perf). Never for a closed sandbox: nothing would remove it."""
        if self._closed:
            raise SandboxLost(f"sandbox {self.trial_id} is closed")
        if self._judge_id is None:
            self._judge_id = str(self._run_container(self._labels, judge=True).id)
        return self._judge_id

    def reap(self) -> list[str]:
        if self._quiet:
            # No exec since the last reap, so none met a dead container; the check that follows
            # runs in the judge's container, or is a cache hit with no exec at all. Its verdict
            # counts only while the agent's container still runs (and so after the exec: `_exec`).
            self._check_alive(self._id)
        ended = [] if self._quiet else list(self.exec(":", reap=True).ended)
        self._unsettled = False
        return ended

    def identity(self) -> dict[str, Any]:
        """What decides how a check runs here, for the check cache's key: the image's content id
        and the limits (whether the cache or reuse are on does not)."""
        return {"kind": "docker", "image_id": self._image_id, **self._cfg.limits()}

    def cost(self) -> dict[str, float]:
        cpus = [container_cpu_s(c) for c in (self._id, self._judge_id) if c is not None]
        cpu = None if None in cpus else sum(c for c in cpus if c is not None)
        return {**super().cost(), **({"cpu_s": cpu} if cpu is not None else {})}

    def _probe(self) -> str:
        """Both containers' state (the agent's first). A check runs in the judge's container and
        cannot reach the agent's (no mount, namespace or process in common), so a check's own probe
        reads the judge's only and is joined to the agent's part read here (`_joined`)."""
        parts = []
        for cid in (self._id, self._judge_container()):
            # a harness exec: it taints nothing
            res = self._exec(":", None, True, judge=True, probe=True, inside=cid)
            parts.append(res.probe if res.probe is not None and not res.ended else probe_failed())
        self._agent_probe = parts[0]
        return self._joined(parts[1])

    def _joined(self, judge_probe: str) -> str:
        """One reading of both containers; a part that failed makes it the failed reading it is."""
        for part in (self._agent_probe or probe_failed(), judge_probe):
            if part.startswith(_PROBE_FAILED):
                return part
        return f"{self._agent_probe}\n(the judge's container)\n{judge_probe}"

    def _exec(
        self,
        cmd: str,
        timeout: float | None,
        reap: bool,
        judge: bool = False,
        probe: bool = False,
        env: Mapping[str, str] | None = None,
        output_limit_chars: int | None = None,
        inside: str | None = None,
    ) -> ExecResult:
        """`inside`: the container (the agent's or the judge's); by default the judge's for an exec
        of the judge's, else the agent's."""
        limit = exec_limit(self._cfg, self.trial_id, self._closed, cmd, timeout, env, judge)
        if probe and not judge:
            raise ValueError("probe=True needs judge=True: the probe is the judge's, on its channel")
        self._execs += 1
        errors = _engine_errors()
        marker = uuid.uuid4().hex
        # `timeout -s KILL` kills the command's whole process group inside the container;
        # `exec 2>&1` merges the command's stderr into stdout at the fd, so the order is its own.
        # The outer shell then reports on the (otherwise unused) stderr stream that it finished:
        # without that sentinel, a 137 means the whole container died, not just the command.
        argv = (
            judge_argv(f"{limit:.3f}", cmd, reap, PROBE if probe else "")
            if judge
            else agent_argv(f"{limit:.3f}", cmd, reap)
        )
        cid = inside or (self._judge_container() if judge else self._id)
        tail = OutputTail(output_limit_chars or self._cfg.output_limit_chars)
        start = time.monotonic()
        # An agent's env reaches its command through the judge's wrapper, `timeout` and setpriv,
        # which keep the environment; the exec's mark comes last, so no env can unset it.
        environment = [f"{k}={v}" for k, v in (env or {}).items() if k != _MARK] + [f"{_MARK}={marker}"]

        def create_and_start() -> tuple[str, socket.socket, bytes]:
            exec_id = self._api.exec_create(cid, argv, workdir="/work", environment=environment)["Id"]
            return (exec_id, *_open_stream(self._api, self._sock_path, exec_id))

        try:
            # A hung create/start is retried once as a new exec, after ending whatever the
            # first attempt may have started.
            exec_id, sock, first = _retry_once(
                "exec start", create_and_start, before_retry=lambda: self._kill_all(cid)
            )
        except errors as e:
            raise self._lost(e, cid) from e
        try:
            finished, err = _pump(sock, first, tail, start + limit + GRACE_S + (PROBE_S if probe else 0))
        except OSError as e:
            raise self._lost(e, cid) from e
        finally:
            sock.close()
        duration = time.monotonic() - start
        completed = _SENTINEL in err  # the rest of stderr is the wrapper's noise ("Killed")
        if finished:
            if not completed:
                self._check_alive(cid, wait_s=2.0)  # the engine may record the death a moment later
            exit_code = self._exit_code(exec_id, cid)
            timed_out = exit_code in (124, 137) and duration >= limit
        else:  # the stream outlived timeout + grace (the engine hung, or stdout is held open)
            exit_code, timed_out = 137, True
        if timed_out:
            # The wrapper's own reap ends what escaped `timeout`'s process group, unless the
            # stream outlived the grace: then a root shell of its own ends everything but pid 1.
            self._kill_all(cid)
            self._check_alive(cid)
        # Newlines only: splitlines() also breaks at \r, \x1c and the like, which a process name
        # in the reap's list can hold, and a line it made would start where the agent chose.
        lines = err.decode("utf-8", "replace").split("\n")
        ended = tuple(line[6:] for line in lines if line.startswith("ended "))
        if reap and not completed:  # the wrapper never reached its reap: reap on its own
            ended += self._exec(":", None, True, judge, inside=cid).ended
        if cid != self._id:
            # A certification in the judge's container says nothing of the agent's, and an agent
            # that runs no command never execs there: a verdict counts only while the agent's
            # container still runs (killed mid-trial, the trial is `sandbox_lost`, never a success).
            self._check_alive(self._id)
        # The judge's report: written on fd 3 by the launcher only (judge_argv), and read only from
        # a wrapper that ran to its end, whose exit status is then the launcher's own (certify.py
        # accepts a report only with that status).
        report = (
            "\n".join(line for line in lines if line.startswith("report ")) if judge and completed else ""
        )
        # The probe's output counts only from a wrapper that reached its end (pristine.py).
        return ExecResult(
            exit_code,
            tail.text(),
            duration,
            timed_out,
            ended,
            report,
            (probed(lines, completed) if inside else self._joined(probed(lines, completed)))
            if probe
            else None,
        )

    def _exit_code(self, exec_id: str, cid: str) -> int:
        try:
            return recorded_exit(
                lambda: _retry_once("exec inspect", lambda: self._api.exec_inspect(exec_id)), exec_id
            )
        except _engine_errors() as e:
            raise self._lost(e, cid) from e

    def _kill_all(self, cid: str) -> None:
        """End every process but pid 1 from the judge's root shell (REAP), after a command that
        outlived its timeout or an exec start retried: nothing else of the harness's runs then."""
        try:
            kid = self._api.exec_create(cid, ["sh", "-c", REAP], user="0:0")["Id"]
            self._api.exec_start(kid)
        except _engine_errors() as e:
            log.warning("sandbox %s: could not kill timed-out processes: %s", self.trial_id, e)

    def _check_alive(self, cid: str, wait_s: float = 0.0) -> None:
        """Raise SandboxLost unless the container (the agent's or the judge's) still runs; poll up
        to wait_s for it to stop."""
        until = time.monotonic() + wait_s
        while True:
            try:
                state = _retry_once("container inspect", lambda: self._api.inspect_container(cid))["State"]
            except _engine_errors() as e:
                raise SandboxLost(f"sandbox {self.trial_id}: container {cid[:12]} lost: {e}") from e
            # OOMKilled says the cgroup saw an OOM kill at some point, not that pid 1 died of it: where
            # the engine kept pid 1 out of the OOM killer's reach, a dead container is not the agent's.
            if not state.get("Running") and state.get("OOMKilled") and _PID1_OOM[0] is not True:
                # Only the agent's code and what it left (its processes, its files in the tmpfs
                # mounts, which count against the memory limit) can fill the container's memory:
                # the judge's own use is bounded and small. Its failure, not ours (issue 42).
                raise failure(
                    "resource_exhausted",
                    f"sandbox {self.trial_id}: the container's memory "
                    f"({self._cfg.memory}) was exhausted and its pid 1 killed by the OOM killer",
                )
            if not state.get("Running"):
                raise SandboxLost(
                    f"sandbox {self.trial_id}: container {cid[:12]} is "
                    f"{state.get('Status')} (exit {state.get('ExitCode')}, "
                    f"oom_killed={state.get('OOMKilled')})"
                )
            if time.monotonic() >= until:
                return
            time.sleep(0.02)

    def _lost(self, e: BaseException, cid: str) -> Exception:
        """What an engine error on this sandbox means: the agent's failure if its container died
        of memory the agent's code took (`_check_alive`), else the sandbox is lost."""
        try:
            self._check_alive(cid)
        except (SandboxLost, TrialFailed) as dead:
            if isinstance(dead, TrialFailed):
                return dead
        return SandboxLost(f"sandbox {self.trial_id}: container {cid[:12]} lost: {e}")

    def close(self, interrupted: bool = False) -> None:
        """Remove the container and the working copy. Idempotent; never raises for a gone container."""
        if self._closed:
            return
        for cid in (self._id, self._judge_id):
            if cid is None:
                continue
            try:
                _retry_once("container remove", lambda cid=cid: self._api.remove_container(cid, force=True))
            except Exception as e:  # NotFound (already swept) or engine gone: the dir goes anyway
                if type(e).__name__ != "NotFound":
                    log.warning("sandbox %s: could not remove container %s: %s", self.trial_id, cid[:12], e)
        log.debug("sandbox %s closed (interrupted=%s)", self.trial_id, interrupted)
        super().close(interrupted)


def tmpfs_bytes(memory: str) -> tuple[int, int]:
    """Sizes of /tmp and /dev/shm: memory the agent can fill and no OOM kill frees (tmpfs pages
    count against the container's memory limit). Together at most 3/8 of the limit, so the
    judge keeps room to run after the agent filled both (issue 42)."""
    units = {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    m = memory.lower()
    limit = int(m[:-1]) * units[m[-1]] if m[-1] in units else int(m)
    return min(256 << 20, limit // 4), min(64 << 20, limit // 8)


def create(
    cfg: SandboxConfig,
    files: Mapping[str, str],
    trial_id: str,
    labels: Mapping[str, str] | None = None,
    mounts: Sequence[Mount] = (),
) -> DockerSandbox:
    return DockerSandbox(cfg, files, trial_id, labels, mounts)
