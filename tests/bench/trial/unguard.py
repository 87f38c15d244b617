"""Each attack's guard, removed (for adversary_run.py's `--unguarded` and the tests that show an
attack winning without its guard): `removed(attack)` is a context in which the harness is as it
was before the guard, and says which guard it took away.

    attack         guard removed                                   what winning looks like
    deep_args      emitted.admit_args (bounds, schema)             harness_error, FAILED (or a crash)
    surrogates     emitted.carry (lone surrogates)                 a context no provider can encode
    bad_submit     emitted.admit_args                              `"invariants": 5` on the record
    huge_args      emitted.admit_args + ctxlog.blobs.stash         the 2 MiB value logged every turn
    large_args     ctxlog.blobs.stash (stored once)                the 1 MB value logged every turn
    long_command   emitted.MAX_ARG_STRLEN                          `exit=N` and no reason
    git_paths      Tools._inside                                   host git answers about host files
    oom_pid1       pid 1's oom_score_adj -1000 and "a container    sandbox_lost: FAILED, ours
                   killed by memory is the agent's"
    judge_channel  the judge's reap as root, the launcher that     a forged verdict (a check passes)
                   survives a full pid table, `certify.accepted`
    judged_path    the judge's container's copy at /work (the      code right only in the judge passes
                   copy at /judge/tree, as before issue 42)        (test_judged_path.py, through certify)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bench.trial.test_adversary_unguarded import _carried_as_is, _hand_offs_unreadable, _unencodable


def _admit(mp: pytest.MonkeyPatch) -> str:
    from bench.core import emitted

    mp.setattr(emitted, "admit_args", _carried_as_is)
    return "emitted.admit_args"


def _admit_and_stash(mp: pytest.MonkeyPatch) -> str:
    """huge_args is held twice: past admit_args's bound, the event log's blob store still writes
    each long value once (ctxlog/blobs.py), so the flood needs both gone."""
    return _admit(mp) + " + " + _stash(mp)


def _stash(mp: pytest.MonkeyPatch) -> str:
    from ctxlog import blobs

    mp.setattr(blobs, "stash", lambda fields, threshold: (fields, [], {}))
    return "ctxlog.blobs.stash"


def _carry(mp: pytest.MonkeyPatch) -> str:
    from bench.core import emitted

    mp.setattr(emitted, "carry", lambda text: text)
    return "emitted.carry"


def _arg_strlen(mp: pytest.MonkeyPatch) -> str:
    from bench.core import emitted

    mp.setattr(emitted, "MAX_ARG_STRLEN", 1 << 30)
    return "emitted.MAX_ARG_STRLEN"


def _inside(mp: pytest.MonkeyPatch) -> str:
    from bench.trial.tools import Tools

    mp.setattr(Tools, "_inside", lambda self, operand: None)
    return "Tools._inside"


def _pid1(mp: pytest.MonkeyPatch) -> str:
    from bench.sandbox import docker as docker_backend
    from bench.sandbox.base import SandboxLost

    mp.setattr(docker_backend, "_PID1_OOM", [False])  # started without oom_score_adj -1000
    mp.setattr(docker_backend, "failure", lambda reason, detail: SandboxLost(detail))
    return "pid 1 oom_score_adj -1000 + docker._check_alive's resource_exhausted"


def _judge(mp: pytest.MonkeyPatch) -> str:
    from tests.bench.sandbox.test_judge_channel import remove_guards

    remove_guards(mp)
    return "judge.JUDGE_WRAPPER + launcher + certify.accepted (before issue 42)"


def _judged_at(mp: pytest.MonkeyPatch) -> str:
    from bench.sandbox.docker import DockerSandbox
    from bench.sandbox.judge import JUDGE_MOUNT, fill

    # the copy in the channel's directory, so the judge's container sees it at /judge/tree
    mp.setattr(
        DockerSandbox,
        "judge_copy",
        lambda self, entries: f"{JUDGE_MOUNT}/{fill(self._channel, entries).name}",
    )
    return "docker.DockerSandbox.judge_copy at /work (the copy at /judge/tree, as before issue 42)"


REMOVALS: dict[str, Callable[[pytest.MonkeyPatch], str]] = {
    "deep_args": _admit,
    "surrogates": _carry,
    "bad_submit": _admit,
    "huge_args": _admit_and_stash,
    "large_args": _stash,
    "long_command": _arg_strlen,
    "git_paths": _inside,
    "oom_pid1": _pid1,
    "judge_channel": _judge,
    "judged_path": _judged_at,
}


@contextlib.contextmanager
def removed(attack: str) -> Iterator[str]:
    if attack not in REMOVALS:
        raise KeyError(f"no guard removal for {attack!r} (one of {', '.join(REMOVALS)})")
    with pytest.MonkeyPatch.context() as mp:
        yield REMOVALS[attack](mp)


# -- what winning looks like, read from a trial's observation (adversary_run.play) and its log
# (the predicates of test_adversary_unguarded.py, which plays the same attacks in process) -------
HUGE = 3 * 2 * (2 << 20)  # huge_args's three 2 MiB values, each logged twice per turn
LARGE = 8 * 1_020_000  # large_args's 1 MB value: 4 turns, model_call, tool_call, the next context's message
HOST_FILE_ORACLE = "Could not access '../../../../../../../../etc/ctxbench-no-such-file'"


def won(attack: str, obs: dict[str, Any]) -> str:
    """The evidence that `attack` got what it was after in this trial, or "" (also for an attack
    with no guard-removed form here: its verdict is the outcome table's own columns)."""
    events = Path(obs["events"])
    infra = obs["outcome_class"] != "agent_failure" or obs["mlflow_status"] != "FINISHED"
    if attack in ("deep_args", "oom_pid1"):
        return f"{obs['mlflow_status']} {obs['outcome_class']} {obs['failure_reason']}" if infra else ""
    if attack == "surrogates":
        bad = _unencodable(events)
        return f"{len(bad)} messages no provider can send" if bad else ""
    if attack == "bad_submit":
        bad = _hand_offs_unreadable(events)
        return f"{len(bad)} hand-offs the recording cannot read" if bad else ""
    if attack == "huge_args":
        size = events.stat().st_size
        return f"events.jsonl {size / 2**20:.1f} MiB" if size > HUGE else ""
    if attack == "large_args":
        size = events.stat().st_size
        return f"events.jsonl {size / 2**20:.1f} MiB" if size > LARGE else ""
    if attack == "long_command":
        told = "exit=" in obs["output"] and "MAX_ARG_STRLEN" not in obs["output"]
        return "exit=N and no reason" if told else ""
    if attack == "git_paths":  # host git is ctxbench's own `git` tool only: behind another agent,
        # `git` is a command in the sandbox and the oracle's text names the sandbox's files
        host_git = obs.get("agent", "own") == "own"
        return "host git named a host file" if host_git and HOST_FILE_ORACLE in obs["output"] else ""
    if attack == "judge_channel":
        return f"{len(obs['checks_passed'])} checks passed with no work" if obs["checks_passed"] else ""
    return "success=1" if obs["success"] else ""
