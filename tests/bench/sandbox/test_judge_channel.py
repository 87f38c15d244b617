"""The judge never lends a channel or a process to the agent's uid (issue 42, bench/sandbox/judge.py,
bench/trial/launcher.py, certify.accepted): the attack of bench/providers/attacks/channel.py run
through certification, with its guards and with them removed (the judge's reap run as the agent's
uid with the report channel on its stderr, a lone `report` line taken whatever the exec's status,
a launcher that dies when it cannot fork), where it forges a passing verdict for wrong code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.eventlog.writer import EventLog
from bench.providers.attacks.channel import HOLD_AND_FORGE
from bench.sandbox import judge
from bench.sandbox.base import ExecResult, SandboxConfig
from bench.sandbox.docker import DockerSandbox, create
from bench.trial import certify as certify_module
from bench.trial.certify import HarnessCopy, certify
from tests.bench.trial.conftest import CHECK, FILES, tiny_task

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("docker_ready")]

WRONG = "def add(a, b):\n    return a - b\n"

GUARDED_WRAPPER, GUARDED_ACCEPTED = judge.JUDGE_WRAPPER, certify_module.accepted

# -- the guards, removed: the judge as it was before issue 42 ---------------------------------
# The reap ran as the agent's uid (setpriv, then `sh`: dumpable), with the judge's channel on its
# stderr; `kill -9 -1` as the agent ended the agent's processes.
_OLD_REAP = (
    'u=; while read -r k v _; do [ "$k" = Uid: ] && u=$v && break; done < /proc/self/status; '
    'left() { for d in /proc/[0-9]*; do [ "${d#/proc/}" = $$ ] && continue; '
    'while read -r k v _; do [ "$k" = Uid: ] || continue; [ "$v" = "$u" ] && return 0; break; '
    'done < "$d/status" 2>/dev/null; done; return 1; }; '
    "n=0; for d in /proc/[0-9]*; do p=${d#/proc/}; "
    '{ [ "$p" = 1 ] || [ "$p" = $$ ] || [ "$p" = "$PPID" ]; } && continue; '
    'c=; read -r c < "$d/comm" 2>/dev/null; n=$((n+1)); [ $n -le 64 ] && echo "ended $p $c" >&2; done; '
    '[ $n -gt 64 ] && echo "ended ... $((n-64)) more" >&2; '
    "i=0; while [ $i -lt 500 ] && kill -9 -1 2>/dev/null && left; do i=$((i+1)); done; "
    "i=0; while [ $i -lt 100 ] && left; do kill -9 -1 2>/dev/null; i=$((i+1)); sleep 0.05; done"
)
_OLD_AS_AGENT = f"setpriv --reuid={judge.AGENT_UID} --regid={judge.AGENT_UID} --clear-groups"
OLD_JUDGE_WRAPPER = (
    'timeout -s KILL "$1" sh -c "$2"; rc=$?; '
    f"if [ \"$3\" = 1 ]; then {_OLD_AS_AGENT} sh -c '{_OLD_REAP}'; fi; {judge._PROBED}{judge._DONE}"
)
# The launcher as it was (commit 767c270): it ended the agent's processes between parts from a
# child that became the agent, gave up when it could not fork, and died at its next fork.
OLD_LAUNCHER = Path(__file__).parent / "data" / "launcher_before_issue42.py.txt"


def old_accepted(res: ExecResult) -> tuple[dict, str]:
    """A lone `report` line, whatever the exec's status."""
    lines = [line[len("report ") :] for line in res.report.splitlines()]
    return (json.loads(lines[0]), "") if len(lines) == 1 else ({}, "")


def remove_guards(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(certify_module, "_LAUNCHER_PATH", str(OLD_LAUNCHER))
    monkeypatch.setattr(judge, "JUDGE_WRAPPER", OLD_JUDGE_WRAPPER)
    monkeypatch.setattr(certify_module, "accepted", old_accepted)


@pytest.fixture
def sb(sandbox_cfg: SandboxConfig) -> Iterator[DockerSandbox]:
    s = create(sandbox_cfg, FILES, "judge-channel")
    yield s
    s.close()


def _attack(sb: DockerSandbox, tmp_path: Path, n: int = 0) -> certify_module.CheckOutcome:
    sb.write_file("held.py", HOLD_AND_FORGE)
    sb.write_file("calc.py", "import held  # noqa\n" + WRONG)
    task = tiny_task()  # the check, then its standing invariant probe: the launcher must start a second part
    return certify(
        sb,
        HarnessCopy(task),
        EventLog(tmp_path / f"e{n}.jsonl"),
        0,
        "s01",
        CHECK,
        invariants=list(task.steps[0].establishes),
    )


def test_no_process_of_the_judges_runs_as_the_agent(sb: DockerSandbox) -> None:
    """Every wrapper is root's; the agent's command alone is the agent's, and its stderr is not the
    exec's (the channel the harness reads)."""
    res = sb.exec(
        "sleep 5 & for p in /proc/[0-9]*; do echo \"$(awk '/^Uid/{print $2}' $p/status) "
        "$(tr '\\0' ' ' < $p/cmdline | head -c 60)\"; done; readlink /proc/$$/fd/1 /proc/$$/fd/2",
        reap=True,
    )
    lines = res.output.splitlines()
    wrapper = [line for line in lines if "timeout -s KILL" in line]  # the wrapper's `timeout`, and its shell
    assert wrapper and all(line.startswith("0 ") for line in wrapper), res.output
    assert lines[-1] == lines[-2], res.output  # the agent's stderr is its stdout, never the exec's stderr
    assert any("sleep" in e for e in res.ended), res.ended  # ended by the root shell's kill


def test_a_forged_report_from_the_code_under_test_is_never_taken(sb: DockerSandbox, tmp_path: Path) -> None:
    out = _attack(sb, tmp_path)
    assert not out.passed, out.output
    assert "FORGED" not in out.output
    assert any("sleep" in e for e in out.ended), out.ended  # its sleepers, ended by the judge's root shell
    assert sb.exec("echo alive", reap=True).output == "alive\n"  # no process of it holds a pid after


def test_without_its_guards_the_forged_report_passes_wrong_code(
    sb: DockerSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remove_guards(monkeypatch)
    # The attack races the old reap's listing (~1 in 8 tries lost it here): three tries.
    outs = []
    while len(outs) < 3 and not any(o.passed for o in outs):
        outs.append(_attack(sb, tmp_path, len(outs)))
    assert any(o.passed for o in outs), [o.output[-300:] for o in outs]  # a - b certified as add: it wins


def _whys(tmp_path: Path, n: int) -> list[str]:
    """Why each part of the check of try `n` was judged as it was (its `check` event)."""
    checks = [
        json.loads(line)
        for line in (tmp_path / f"e{n}.jsonl").read_text().splitlines()
        if json.loads(line)["kind"] == "check"
    ]
    return [p["why"] for p in checks[-1]["parts"]]


@pytest.mark.parametrize("guard", ["wrapper", "status"])
def test_either_guard_alone_refuses_the_forgery(
    sb: DockerSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guard: str
) -> None:
    """The reap never runs as the agent (the line is never written), and a report counts only with
    the exec's own status (a line written all the same is not taken): each holds without the other,
    and each for its own reason, read from the check's parts."""
    remove_guards(monkeypatch)
    if guard == "wrapper":
        monkeypatch.setattr(judge, "JUDGE_WRAPPER", GUARDED_WRAPPER)
        out = _attack(sb, tmp_path)
        assert not out.passed, out.output
        whys = _whys(tmp_path, 0)  # the launcher died at its fork, and no one else could write a report
        assert whys[0].startswith("no report") and not any("report" in v for v in out.violations), (whys, out)
        return
    monkeypatch.setattr(certify_module, "accepted", GUARDED_ACCEPTED)
    # The forger races the old reap's listing (~1 in 8 tries it never writes its line): up to
    # three tries, until one forged line reached the judge and was refused for its status.
    outs: list[certify_module.CheckOutcome] = []
    refused = "a report says the launcher exited 0, but the exec exited"
    for n in range(3):
        outs.append(_attack(sb, tmp_path, n))
        if any(refused in why for why in _whys(tmp_path, n)):
            break
    assert not any(o.passed for o in outs), [o.output[-300:] for o in outs]
    whys = _whys(tmp_path, len(outs) - 1)
    assert whys and all(refused in why and "not the launcher's" in why for why in whys), whys
    assert any(refused in v for v in outs[-1].violations), outs[-1].violations  # logged as a forgery
