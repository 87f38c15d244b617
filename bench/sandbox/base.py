"""Sandbox contract shared by all backends: the validated config, the exec result, the
error for a lost sandbox, the `Sandbox` protocol, and the bounded output tail.

The host-side working copy every backend builds on, and the security model it enforces
(container sees only the working copy; git dir outside it; race-free host file operations),
is bench.sandbox.workcopy; `WorkingCopy` is re-exported here.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import AfterValidator, Field, StrictBool, StrictFloat, StrictStr, StringConstraints

from bench.core import knobs
from bench.core.knobs import Knobs
from bench.core.registry import Registry, UnknownChoice
from bench.core.types import plain

from .paths import PathRefused as PathRefused
from .paths import Protected

# Re-exported: the local backend imports the working copy from here, with the contract.
from .workcopy import GitError as GitError
from .workcopy import WorkingCopy as WorkingCopy

# kind -> the backend's create(); a backend is imported only when chosen.
SANDBOXES = Registry(
    "sandbox.kind",
    {
        "docker": "bench.sandbox.docker:create",
        "local": "bench.sandbox.local:create",
    },
    hint="choose one with sandbox=<kind> (see conf/sandbox/)",
    group="ctxbench.sandboxes",
)
# The sandbox's accelerations (bench/accel/, docs/scaling.md): each changes how fast a trial runs,
# never what it records, so none is in the config hash (bench/config.py) or a check's identity.
ANNEX_SWITCHES = ("check_cache", "reuse", "fast_git")
_MEMORY_RE = re.compile(r"^[1-9][0-9]*[bkmg]?$", re.IGNORECASE)


def _kind(value: str) -> str:
    try:
        SANDBOXES.check(value)
    except UnknownChoice as exc:  # "sandbox.kind='x' is not one of ...": the one line names key and value
        raise ValueError(str(exc).split(" is ", 1)[-1]) from None
    return value


def _memory(value: str) -> str:
    if not _MEMORY_RE.match(value):
        raise ValueError('a docker memory size like "512m" or "2g"')
    return value.lower()


_Name = Annotated[StrictStr, StringConstraints(strip_whitespace=True, min_length=1)]


class SandboxConfig(Knobs):
    """The `sandbox` group: where model-generated code and step checks run. Every knob is stated once
    here (docs/design.md §4, "Knobs"); conf/sandbox/<kind>.yaml names its kind, and the defaults come
    from `/knobs/sandbox` (hydra_plugins/ctxbench_knobs)."""

    kind: Annotated[StrictStr, AfterValidator(_kind)] = Field(
        description="docker: a container per trial; local: plain host subprocesses, UNSAFE, debugging only"
    )
    # No default: conf/sandbox/docker.yaml states them, where scripts/build_image.sh reads them.
    image: _Name = Field(description="tag of the sandbox image `make docker` builds; unused by kind=local")
    base_image: _Name = Field(
        description="FROM of the image; bootstrapped with debootstrap when it cannot be "
        "pulled; unused by kind=local"
    )
    memory: Annotated[StrictStr, AfterValidator(_memory)] = Field(
        default="512m", description="container memory limit, docker syntax <n>[b|k|m|g]; swap capped to it"
    )
    cpus: Annotated[StrictFloat, Field(ge=0.01)] = Field(
        default=1.0, description="CPU quota in CPUs (fractional allowed)"
    )
    pids_limit: Annotated[knobs.Integer, Field(ge=16)] = Field(
        default=256, description="max processes/threads in the container: a fork bomb stops there"
    )
    # 120, not 120.0: the default is what the composed config (and so the config hash) carries.
    exec_timeout_s: Annotated[StrictFloat, Field(ge=0.1)] = Field(
        default=120, description="per-command timeout when a tool or check gives none; SIGKILLed at it"
    )
    output_limit_chars: Annotated[knobs.Integer, Field(ge=200)] = Field(
        default=20000, description="command output is cut to its last N characters, with a marker line"
    )
    check_cache: StrictBool = Field(
        default=False,
        description="reuse a check's verdict from a check of this "
        "study on exactly the same state, while pristine (docs/threat_model.md)",
    )
    reuse: StrictBool = Field(
        default=False,
        description="hand a pristine sandbox to the same worker's next trial instead of a new one",
    )
    fast_git: StrictBool = Field(
        default=False,
        description="the harness's git in process, its answers "
        "kept, its git dir in memory (bench/accel/fastgit.py)",
    )

    def limits(self) -> dict[str, Any]:
        """What changes how a command runs (not the image tag: a backend names its content)."""
        return {k: v for k, v in self.model_dump().items() if k not in (*ANNEX_SWITCHES, "image")}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SandboxConfig:
        """The composed `sandbox` group, or a ConfigError of one line naming the key."""
        return knobs.validate(
            cls, plain(d), "sandbox", "conf/sandbox/<kind>.yaml or the `sandbox.<key>=...` override"
        )


# Where a mount may not land: the sandbox's own places (the working copy, the judge's copy, the
# tmpfs the agent writes) and the image's system folders an agent's commands rely on.
_MOUNT_REFUSED = ("/work", "/judge", "/tmp", "/proc", "/sys", "/dev", "/etc", "/usr", "/bin", "/lib", "/sbin")


@dataclass(frozen=True)
class Mount:
    """A host folder an external agent's player shows read-only inside its sandbox (the agent's
    install, the proxy socket's folder: docs/agents.md). Never part of SandboxConfig: a trial of
    ctxbench's own loop has none, and its config, identity and records stay what they were."""

    source: Path
    target: str

    def __post_init__(self) -> None:
        if not self.source.is_absolute() or not self.source.is_dir():
            raise ValueError(
                f"sandbox mount: source {str(self.source)!r} must be an existing folder given by an "
                "absolute path"
            )
        t = self.target
        if (
            not t.startswith("/")
            or t != os.path.normpath(t)
            or any(t == r or t.startswith(r + "/") or r.startswith(t + "/") for r in (*_MOUNT_REFUSED, "/"))
        ):
            raise ValueError(
                f"sandbox mount: target {t!r} must be an absolute, normal path outside "
                f"{', '.join(_MOUNT_REFUSED)} (e.g. /opt/agent)"
            )


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    output: str  # stdout+stderr merged, tail-truncated with a marker line
    duration_s: float
    timed_out: bool
    ended: tuple[str, ...] = ()  # with reap=True: "pid name" of each process the command left running
    report: str = ""  # judge=True: the `report ...` lines on the judge's own channel (fd 3), never the output
    # probe=True: the state outside the working copy after the reap (pristine.py), or a failure
    # that equals nothing; None where not asked or the backend has no probe (local)
    probe: str | None = None


class SandboxLost(RuntimeError):
    """The container vanished, was killed, or the engine stopped answering."""


@runtime_checkable
class Sandbox(Protocol):
    """One trial's sandbox. exec: `sh -c cmd` in the working copy, killed at the timeout
    (None = cfg.exec_timeout_s); raises SandboxLost if the sandbox is gone; with `reap`, every
    process the command left running is ended before it returns (listed in `ended`); `reap()`
    ends every process left in the sandbox. `judge=True` runs a harness command as the judge
    (judge.py), whose fd 3 is its report channel (`ExecResult.report`), and with `probe=True` the
    exec then also probes the state outside the working copy (`ExecResult.probe`, pristine.py);
    `judge_copy` writes the tree a certification runs on and says where the sandbox sees it.
    File ops take repo-relative paths through paths.canonical: ValueError (PathRefused) for
    escapes, absolute paths, symlinks and .git; FileNotFoundError if missing. `resolve` says
    where a path lands through symlinks; `restore` puts protected files back (workcopy.py).
    `hold` makes the next commit refuse any tree but the one a check just certified
    (bench/trial/certified_tree.py). `env` adds variables to an agent command's environment (never
    to the judge's), `output_limit_chars` keeps a longer tail than the config's for it (a player
    reading its agent's own output, docs/agents.md). git/commit/tree_sha run host git against a git dir outside the working copy (GitError when
    git refuses); commits use fixed dates, so equal files and messages give equal shas.
    `pristine`, `state_sha`, `before_check`/`after_check` and `renew` serve the check cache and
    sandbox reuse (pristine.py, workcopy.py), `reusable` reuse alone (no check ran code here); `identity` is what else decides how a check runs."""

    trial_id: str
    workdir: Path
    base_commit: str
    agent_uid: int | None  # the uid agent code runs as, apart from the judge's (None: no separation)

    def exec(
        self,
        cmd: str,
        timeout: float | None = None,
        reap: bool = False,
        judge: bool = False,
        probe: bool = False,
        env: Mapping[str, str] | None = None,
        output_limit_chars: int | None = None,
    ) -> ExecResult: ...
    def judge_copy(self, entries: Mapping[str, tuple[str, bytes]]) -> str: ...
    def reap(self) -> list[str]: ...
    def resolve(self, path: str) -> tuple[str, str | None]: ...
    def restore(self, files: Mapping[str, str], protected: Protected) -> list[str]: ...
    def read_file(self, path: str) -> str: ...
    def read_bytes(self, path: str, limit: int) -> bytes: ...
    def write_file(self, path: str, content: str) -> None: ...
    def delete_file(self, path: str) -> None: ...
    def list_files(self) -> list[str]: ...
    def git(self, *args: str) -> str: ...
    def commit(self, message: str, author: str) -> str: ...
    def hold(self, tree: str, committed: Callable[[str, str], None]) -> None: ...
    def tree_sha(self) -> str: ...
    def close(self, interrupted: bool = False) -> None: ...
    @property
    def pristine(self) -> bool: ...
    @property
    def not_pristine_because(self) -> str: ...
    @property
    def reusable(self) -> bool: ...
    @property
    def not_reusable_because(self) -> str: ...
    def state_sha(self) -> str: ...
    def identity(self) -> dict[str, Any]: ...
    def before_check(self) -> None: ...
    def after_check(self, was: bool, state: str, ended: tuple[str, ...], probe: str | None) -> bool: ...
    def renew(self, trial_id: str, files: Mapping[str, str]) -> None: ...
    def cost(self) -> dict[str, float]: ...


def exec_limit(
    cfg: SandboxConfig,
    trial_id: str,
    closed: bool,
    cmd: str,
    timeout: float | None,
    env: Mapping[str, str] | None = None,
    judge: bool = False,
) -> float:
    """The checks every backend's `exec` makes before running anything; returns the timeout."""
    if env and judge:
        raise ValueError("env is for an agent command: the judge's environment is the harness's own")
    for k, v in (env or {}).items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) or "\0" in v:
            raise ValueError(f"env: {k!r} is not a variable name, or its value holds a NUL byte")
    if closed:
        raise SandboxLost(f"sandbox {trial_id} is closed")
    limit = cfg.exec_timeout_s if timeout is None else float(timeout)
    if not limit > 0:
        raise ValueError(f"timeout must be > 0, got {timeout!r}")
    if "\0" in cmd:
        raise ValueError("command contains a NUL byte")
    return limit


class OutputTail:
    """Collects a byte stream in bounded memory, keeping its tail and counting what it drops."""

    _MARKER = "[ctxbench: output truncated; the first {n} characters were cut]\n"

    def __init__(self, limit_chars: int) -> None:
        self._limit = limit_chars
        self._keep = 4 * limit_chars + 4096  # enough bytes for `limit` chars of any UTF-8
        self._buf = bytearray()
        self._dropped = 0
        # One decoder across dropped head and kept tail, so a split multi-byte char is exact.
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes) -> None:
        self._buf += data
        if len(self._buf) > 2 * self._keep:  # trim rarely: amortised O(1) per byte
            cut = len(self._buf) - self._keep
            self._dropped += len(self._dec.decode(bytes(self._buf[:cut])))
            del self._buf[:cut]

    def text(self) -> str:
        text = self._dec.decode(bytes(self._buf), final=True)
        if self._dropped == 0 and len(text) <= self._limit:
            return text
        budget = self._limit - 80  # the marker line is shorter than 80 chars
        cut = self._dropped + max(0, len(text) - budget)
        return self._MARKER.format(n=cut) + text[-budget:]
