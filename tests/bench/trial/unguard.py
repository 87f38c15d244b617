"""Each attack's guard, removed (for adversary_run.py's `--unguarded` and the tests that show an
attack winning without its guard): `removed(attack)` is a context in which the harness is as it
was before the guard, and says which guard it took away.

    attack         guard removed                                   what winning looks like
    deep_args      emitted.admit_args (bounds, schema)             harness_error, FAILED (or a crash)
    surrogates     emitted.carry (lone surrogates)                 a context no provider can encode
    bad_submit     emitted.admit_args                              `"invariants": 5` on the record
    huge_args      emitted.admit_args                              the 2 MiB value logged every turn
    long_command   emitted.MAX_ARG_STRLEN                          `exit=N` and no reason
    git_paths      Tools._inside                                   host git answers about host files
    oom_pid1       pid 1's oom_score_adj -1000 and "a container    sandbox_lost: FAILED, ours
                   killed by memory is the agent's"
    judge_channel  the judge's reap as root, the launcher that     a forged verdict (a check passes)
                   survives a full pid table, `certify.accepted`
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest


def _carried_as_is(name: str, args: Any) -> Any:
    return args


def _admit(mp: pytest.MonkeyPatch) -> str:
    from bench.core import emitted

    mp.setattr(emitted, "admit_args", _carried_as_is)
    return "emitted.admit_args"


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


REMOVALS: dict[str, Callable[[pytest.MonkeyPatch], str]] = {
    "deep_args": _admit, "surrogates": _carry, "bad_submit": _admit, "huge_args": _admit,
    "long_command": _arg_strlen, "git_paths": _inside, "oom_pid1": _pid1, "judge_channel": _judge,
}


@contextlib.contextmanager
def removed(attack: str) -> Iterator[str]:
    if attack not in REMOVALS:
        raise KeyError(f"no guard removal for {attack!r} (one of {', '.join(REMOVALS)})")
    with pytest.MonkeyPatch.context() as mp:
        yield REMOVALS[attack](mp)
