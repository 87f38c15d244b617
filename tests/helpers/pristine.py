"""Helpers for the tests that attack the check cache and sandbox reuse (bench/accel/checkcache.py,
bench/accel/pristine.py, bench/accel/pool.py).

`tracked(cfg)` is the real sandbox config with both switches on (what `experiment=grid` sets).
`behind_the_harness(box, cmd)` runs a command in a sandbox's container through the engine, not
through the sandbox, so nothing taints it: what a process the tracking missed would do there.
`trial_outcomes(results)` reads every trial of a results folder back from its event log."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.sandbox import SandboxConfig
from bench.sandbox.docker import DockerSandbox, dockerpy


def tracked(cfg: SandboxConfig, **changes: Any) -> SandboxConfig:
    return cfg.model_copy(update={"check_cache": True, "reuse": True, **changes})


def _client() -> Any:
    return dockerpy().from_env()


def behind_the_harness(box: DockerSandbox, cmd: str, detach: bool = False) -> str:
    """Run `cmd` in the container as the agent's uid, without the sandbox knowing."""
    from bench.sandbox.judge import AGENT_UID

    api = _client().api
    exec_id = api.exec_create(
        box.container_id, ["sh", "-c", cmd], workdir="/work", user=f"{AGENT_UID}:{AGENT_UID}"
    )["Id"]
    out = api.exec_start(exec_id, detach=detach)
    return "" if detach else out.decode("utf-8", "replace")


def kill_container(container_id: str) -> None:
    _client().api.kill(container_id)


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
