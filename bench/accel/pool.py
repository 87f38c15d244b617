"""Sandboxes reused across one worker's trials (`sandbox.reuse`, docs/threat_model.md).

Starting and removing a container costs ~1 s of wall time and ~0.5 s of the engine's CPU per
trial, more than everything else a trial does once its checks are cached. So a worker process
keeps the sandbox of its last trial, when that sandbox is pristine and no check ran code in it
(pristine.py `reusable`: no command of the agent's ran in it and every check of its trial was a
check-cache hit; a check that runs moves what no probe can put back, such as the pid counter),
and hands it to its next trial of the same study and sandbox config:

1. `renew` first verifies the reset: one harness exec ends every process but the container's
   pid 1 (there must be none) and probes the state outside the working copy, which must equal
   the probe taken before the container's first check (or becomes it, if no check ran);
2. then it empties the working copy and writes the new task's files in the same place (the
   container's mount), with a new git dir.

A sandbox that is not pristine, fails that verification, or belongs to an interrupted trial is
removed as before. The idle one goes when the worker exits (atexit); if the worker is killed,
the next study's start removes it (its creator is dead: engine.sweep). A reused container keeps
the labels of the trial that created it; the current trial is in the harness's log lines.
"""

from __future__ import annotations

import atexit
import logging
from collections.abc import Callable, Mapping, Sequence

from bench.sandbox import create
from bench.sandbox.base import Mount, Sandbox, SandboxConfig

log = logging.getLogger(__name__)

_idle: dict[tuple[SandboxConfig, str], Sandbox] = {}


def _slot(cfg: SandboxConfig, labels: Mapping[str, str] | None) -> tuple[SandboxConfig, str]:
    return cfg, (labels or {}).get("ctxbench.study", "")


def acquire(
    cfg: SandboxConfig,
    files: Mapping[str, str],
    trial_id: str,
    labels: Mapping[str, str] | None = None,
    make: Callable[..., Sandbox] = create,
    mounts: Sequence[Mount] = (),
) -> Sandbox:
    """The idle sandbox renewed for this trial, or a new one from `make` (bench.sandbox.create).
    A trial whose player mounts folders (an external agent's) always gets a new one, never kept."""
    if mounts:
        return make(cfg, files, trial_id, labels=labels, mounts=mounts)
    sandbox = _idle.pop(_slot(cfg, labels), None) if cfg.reuse else None
    if sandbox is not None:
        try:
            sandbox.renew(trial_id, files)
            return sandbox
        except BaseException as exc:  # not clean, or the engine failed: a new one, as without reuse
            _close_quietly(sandbox)  # an interrupt too: no trial and no idle slot holds it any more
            if not isinstance(exc, Exception):
                raise
            log.info("sandbox not reused (%s): starting a new one", exc)
    return make(cfg, files, trial_id, labels=labels)


def release(
    sandbox: Sandbox, cfg: SandboxConfig, labels: Mapping[str, str] | None = None, interrupted: bool = False
) -> None:
    """Keep a pristine sandbox for the next trial; close any other (raises what close raises)."""
    if cfg.reuse and not interrupted and sandbox.reusable:
        previous = _idle.pop(_slot(cfg, labels), None)
        if previous is not None and previous is not sandbox:
            _close_quietly(previous)
        _idle[_slot(cfg, labels)] = sandbox
        return
    if cfg.reuse and not interrupted:
        log.info("sandbox %s not kept for the next trial: %s", sandbox.trial_id, sandbox.not_reusable_because)
    sandbox.close(interrupted=interrupted)


def close_all() -> None:
    """Remove every idle sandbox of this process (at exit, and for tests)."""
    while _idle:
        _close_quietly(_idle.popitem()[1])


def idle() -> int:
    return len(_idle)


def _close_quietly(sandbox: Sandbox) -> None:
    try:
        sandbox.close()
    except Exception:
        log.warning("closing an idle sandbox failed", exc_info=True)


atexit.register(close_all)
