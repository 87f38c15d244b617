"""Sandboxes: where model-generated code and step checks run (docs/design.md §12).

    sb = create(SandboxConfig.from_dict(cfg.sandbox), task.repo, trial_id)
    try:
        sb.exec("python -m pytest -q tests/test_step1.py", timeout=60)
    finally:
        sb.close()

`kind=docker` (default) isolates the code in a container; `kind=local` is an UNSAFE
debugging backend. Neither backend imports docker-py until it is used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .base import SANDBOXES, ExecResult, Mount, Sandbox, SandboxConfig, SandboxLost

__all__ = ["SANDBOXES", "ExecResult", "Mount", "Sandbox", "SandboxConfig", "SandboxLost", "create", "sweep"]


def create(
    cfg: SandboxConfig,
    files: Mapping[str, str],
    trial_id: str,
    labels: Mapping[str, str] | None = None,
    mounts: Sequence[Mount] = (),
) -> Sandbox:
    """Make the working copy (files committed as `base_commit`) and start the sandbox; `mounts`
    (an external agent's install and socket folder, read-only) only where a player asks for them."""
    if mounts:
        return SANDBOXES.load(cfg.kind)(cfg, files, trial_id, labels, mounts=tuple(mounts))
    return SANDBOXES.load(cfg.kind)(cfg, files, trial_id, labels)


def sweep(label_selector: dict[str, str] | None = None, orphans_only: bool = False) -> int:
    """Remove leaked ctxbench containers (all, or those matching every label); returns the count.
    Without a selector this hits other running studies too: pass `orphans_only=True` to remove
    only containers whose creating process is dead (what a study does when it starts)."""
    from . import docker

    return docker.sweep(label_selector, orphans_only=orphans_only)
