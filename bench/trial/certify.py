"""Certification the agent cannot touch (docs/threat_model.md): how the harness runs a step
check, the standing invariant probes and the final acceptance.

Before anything runs, `prepare` ends every process the agent left (`sandbox.reap`; the check's
own exec ends whatever the code under test leaves), then puts every protected file back from
the harness's own copy (`HarnessCopy`: the task spec plus the harness's own drift commits, never
read back from the working copy); each difference is a `policy_violation`.

Each part of a check (`python3 -B SCRIPT ARGS` or `python3 -B -m pytest ARGS`, joined by
`&&`) then runs through LAUNCHER, the judge (one process for the whole check, as the
container's root, forking a child per part that runs as the agent's uid: judge.py) under
`python3 -I` (no PYTHON* variables, user site or cwd on sys.path, so no PYTHONPATH,
sitecustomize or .pth of the agent's), in a clean environment (`env -i`) with a fresh HOME and
TMPDIR, on a fresh read-only copy of the tree the harness would commit (`judge_copy`: no
ignored file, no `__pycache__`, no bytecode read by any import hook, pytest's own included,
none written), code under test imported from its `.py` source only, and pytest with no
conftest.py and no plugin autoload. The judge reads each child's exit status and its one
message itself and reports them on a channel no process of the agent's holds (fd 3 of the
exec). The harness certifies from that report alone: a part passes when its process exited 0,
its one message says main returned 0 normally and every test the harness's own copy defines
passed. Code that exits early (`os._exit(0)` on import, `sys.exit(0)` in a test) sends no
passing message.

The `check` event records the git tree sha of the copy the judge ran on (`tree`); once the
check has returned, the working copy must still be that tree, and the step's commit must be it
too (certified_tree.py): any difference is the agent's failure `uncertified_tree`.

With `sandbox.check_cache`, a verdict that a check of the study reached on exactly the same
state is reused instead of running the check again (checkcache.py): `prepare` still runs
first, and the `check` event that follows a `check_cached` one is the reused verdict.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import fnmatch
import functools
import json
import os
import re
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.core.outcomes import InfraFailure
from bench.eventlog.writer import EventLog
from bench.sandbox.base import ExecResult, Sandbox
from bench.sandbox.judge import tree_entries
from bench.sandbox.paths import canonical
from bench.trial import certified_tree, hidden_checks
from bench.trial.harness_copy import (
    HarnessCopy as HarnessCopy,  # re-exported: tools and tests use it from here
)
from bench.trial.harness_copy import tamper_scan
from ctxlog import events as ev
from tasks.common.build import parse_source
from tasks.common.run_tests import RUNNER_PATH
from tasks.spec import Invariant

FAILURE_TAIL_CHARS = 1500
Judged = list[list[tuple[bool, str, bool]]]  # per group, per part: (passed, why not, forged)
EARLY = "; it exited 0 all the same"
_ELAPSED = re.compile(r"\bin \d+(?:\.\d+)?s\b")
_LAUNCHER_PATH = os.path.join(os.path.dirname(__file__), "launcher.py")
_SHIPPED = ("remote", "comparer")  # modules of bench.trial the launcher gets as source


def scrub(output: str) -> str:
    """Drop wall-clock figures (pytest's "in 0.41s") from model-visible output: they differ
    run to run, and a context that differs by them would break common random numbers and
    byte-identical logs (docs/design.md)."""
    return _ELAPSED.sub("in <elapsed>", output)


@dataclass(frozen=True)
class Part:
    kind: str  # "script" | "runner" (the shipped fast runner, which names its tests) | "pytest" | "code"
    target: str  # the script's path, "pytest", or "-c" (args: the harness's own one-line program)
    args: tuple[str, ...]
    text: str  # as written in the check


def parse(command: str) -> tuple[Part, ...]:
    """The parts of a check command. Checks are ours: anything else is a harness bug."""
    parts = []
    for text in command.split("&&"):
        words = shlex.split(text) if not set(text) & set(";|&<>`$()\n") else []
        if words[2:4] == ["-m", "pytest"] and words[:2] == ["python3", "-B"]:
            parts.append(Part("pytest", "pytest", tuple(words[4:]), text.strip()))
        elif words[:2] == ["python3", "-B"] and len(words) > 2 and words[2].endswith(".py"):
            target = canonical(words[2])
            kind = "runner" if target == RUNNER_PATH else "script"
            parts.append(Part(kind, target, tuple(words[3:]), text.strip()))
        elif words[:3] == ["python3", "-B", "-c"] and len(words) == 4:  # an import probe of an invariant
            parts.append(Part("code", "-c", (words[3],), text.strip()))
        else:
            raise InfraFailure(
                "harness_error",
                f"check part {text.strip()!r} is not `python3 -B SCRIPT ...`, "
                "`python3 -B -m pytest ...` or `python3 -B -c CODE`: "
                "the harness cannot certify it",
            )
    return tuple(parts)


def expected_tests(part: Part, files: Mapping[str, str]) -> set[str]:
    """The tests the harness's own copy defines for a test-running part, as `path::name`."""
    if part.kind in ("script", "code"):
        return set()
    targets = [a.rstrip("/") for a in part.args if not a.startswith("-")]
    if part.kind == "runner":  # a file, or the test_*.py files directly in a directory
        chosen = [
            p
            for p in files
            if p in targets
            or (os.path.dirname(p) in targets and fnmatch.fnmatch(os.path.basename(p), "test_*.py"))
        ]
    else:  # pytest: files, or test files anywhere below a directory
        chosen = [
            p
            for p in files
            if p in targets
            or (
                any(p.startswith(t + "/") or t in ("", ".") for t in targets)
                and any(fnmatch.fnmatch(os.path.basename(p), g) for g in ("test_*.py", "*_test.py"))
            )
        ]
    return {name for p in chosen for name in _test_names(p, files[p], part.kind)}


@functools.lru_cache(maxsize=1024)  # the harness's own test files: the same few, judged every check
def _test_names(path: str, source: str, kind: str) -> tuple[str, ...]:
    try:
        tree = parse_source(source)
    except SyntaxError:
        return (path,)  # cannot be collected: the runner reports it failed, never passed
    prefix = "test_" if kind == "runner" else "test"
    names = [
        f"{path}::{d.name}"
        for d in tree.body
        if isinstance(d, ast.FunctionDef | ast.AsyncFunctionDef) and d.name.startswith(prefix)
    ]
    if kind == "pytest":
        names += [
            f"{path}::{c.name}::{d.name}"
            for c in tree.body
            if isinstance(c, ast.ClassDef) and c.name.startswith("Test")
            for d in c.body
            if isinstance(d, ast.FunctionDef) and d.name.startswith("test")
        ]
    return tuple(names)


@dataclass
class CheckOutcome:
    passed: bool
    exit_code: int
    output: str
    duration_s: float
    timed_out: bool
    invariant_codes: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)  # protected paths put back before it ran, forgeries
    ended: list[str] = field(default_factory=list)  # processes the agent left, ended before it ran


def prepare(sandbox: Sandbox, copy: HarnessCopy, log: EventLog, turn: int, before: str) -> tuple[list, list]:
    """End the agent's processes, put protected files back, scan the agent's files; log each
    (one `policy_violation` per kind of finding). Returns (processes ended, violations)."""
    ended = sandbox.reap()
    if ended:
        log.append(ev.ProcessKilled(turn=turn, when=f"before {before}", processes=ended))
    violations = []
    restored = sandbox.restore(copy.files, copy.protected)
    if restored:
        violations.append(
            f"protected paths differed from the harness's copy before {before}, restored: "
            + ", ".join(restored)
        )
        log.append(ev.PolicyViolation(turn=turn, tool="(certification)", detail=violations[-1]))
    suspicious = tamper_scan(sandbox, copy)
    if suspicious:
        violations.append("code that could subvert an in-process check runner: " + ", ".join(suspicious))
        log.append(ev.PolicyViolation(turn=turn, tool="(tamper scan)", detail=violations[-1]))
    return ended, violations


def certify(
    sandbox: Sandbox,
    copy: HarnessCopy,
    log: EventLog,
    turn: int,
    step_id: str,
    command: str,
    invariants: list[Invariant] | None = None,
    cache: Any = None,
) -> CheckOutcome:
    """Run a certifying check, then the standing invariant probes, in one sandbox exec (an exec
    costs ~100 ms, a study runs thousands); the check's own verdict is kept apart. With a
    `cache` (bench/accel/checkcache.py's CheckCache, `sandbox.check_cache`), a verdict found for
    the same state is reused instead."""
    ended, violations = prepare(sandbox, copy, log, turn, f"check {step_id}")
    groups = [("check", parse(command))] + [(inv.id, parse(inv.check or "")) for inv in invariants or ()]
    keyed = [("check", command)] + [(i.id, i.check or "") for i in invariants or ()]
    hidden = hidden_checks.files(copy, step_id)
    if hidden:  # the final acceptance's hidden checks: a group of their own, last (hidden_checks.py)
        groups.append((hidden_checks.GROUP, parse(copy.hidden_check)))
        keyed.append((hidden_checks.GROUP, hidden_checks.key(copy)))
    t0 = time.monotonic()
    state = sandbox.state_sha() if sandbox.pristine else None  # tracked: the check cache's or reuse's
    key, hit = (
        cache.lookup(sandbox, state, keyed) if cache is not None and state is not None else (None, None)
    )
    entries = tree_entries(sandbox.workdir, sandbox.list_files(), copy.files, copy.protected)
    tree = certified_tree.tree_of(entries)  # what the judge certifies: the recorded tree must be it
    if hit is not None:
        res, judged = ExecResult(hit.exit_code, hit.output, time.monotonic() - t0, False), hit.judged
        log.append(ev.CheckCached(turn=turn, step=step_id, key=key, origin=hit.origin))
    else:
        res, judged, clean = _run(sandbox, groups, copy, state, entries, hidden)
        if clean and key is not None:
            cache.keep(key, res, judged, step=step_id, turn=turn)
    if res.ended:
        log.append(ev.ProcessKilled(turn=turn, when=f"after check {step_id}", processes=list(res.ended)))
    for (label, _), verdicts in zip(groups, judged, strict=True):  # an early exit 0 is an attempt too
        for why in (w for _, w, forged in verdicts if forged or w.endswith(EARLY)):
            log.append(ev.PolicyViolation(turn=turn, tool="(certification)", detail=f"{label}: {why}"))
            violations.append(f"{label}: {why}")
    check = list(zip(groups[0][1], judged[0], strict=True))
    passed = all(ok for _, (ok, _, _) in check) and not res.timed_out
    output = scrub(res.output)
    if not passed and res.exit_code == 0:  # the exit status says pass: say why it is not
        output += "".join(f"\n[certification] {p.text}: {why}" for p, (ok, why, _) in check if not ok)
    probes = len(invariants or ())
    codes = {
        label: int(not all(ok for ok, _, _ in v))
        for (label, _), v in zip(groups[1 : 1 + probes], judged[1 : 1 + probes], strict=True)
    }
    held = hidden_checks.verdict(groups[-1][1], judged[-1], res.timed_out) if hidden else None
    if held is not None and not held["passed"]:
        output += "".join(f"\n[hidden] {p['part']}: {p['why']}" for p in held["parts"] if not p["ok"])
    log.append(
        ev.Check(
            turn=turn,
            step=step_id,
            command=command,
            exit_code=res.exit_code,
            passed=passed,
            timed_out=res.timed_out,
            output=output[-FAILURE_TAIL_CHARS:],
            parts=[{"part": p.text, "ok": ok, "why": why} for p, (ok, why, _) in check],
            invariants=[i.id for i in invariants or ()],
            tree=tree,
            hidden=held,
            t={"duration_s": round(res.duration_s, 4)},
        )
    )
    certified_tree.after_check(sandbox, log, turn, step_id, tree, entries)
    passed = passed and (held is None or held["passed"])  # the verdict: visible and hidden
    if passed:
        certified_tree.hold(sandbox, log, turn, step_id, tree, entries)
    return CheckOutcome(
        passed,
        res.exit_code,
        output,
        res.duration_s,
        res.timed_out,
        codes,
        violations,
        ended + list(res.ended),
    )


def _run(
    sandbox: Sandbox,
    groups: list[tuple[str, tuple[Part, ...]]],
    copy: HarnessCopy,
    state: str | None,
    entries: Mapping[str, tuple[str, bytes]],
    hidden: Mapping[str, str],
) -> tuple[ExecResult, Judged, bool]:
    """Run every part through the launcher (the judge) in one exec, on a fresh copy of the
    committed tree; judge each part from the judge's report. Also says whether the sandbox is
    still pristine after it (`state`: the working copy before it)."""
    was = sandbox.pristine
    if was:
        state = state or sandbox.state_sha()
        sandbox.before_check()
    # never the hidden checks: they reach the launcher alone (hidden_checks.py)
    tree = sandbox.judge_copy(entries)
    with hidden_checks.deliver(sandbox, tree, hidden) if hidden else contextlib.nullcontext("") as channel:
        res = sandbox.exec(
            _script(groups, tree, sandbox.agent_uid, sorted({**copy.files, **hidden}), channel),
            reap=True,
            judge=True,
            probe=was,
        )  # the probe after the reap, in the same exec (pristine.py)
    files = {**copy.files, **hidden}
    whole, refused = accepted(res)
    if whole.get("hidden") == "lost":  # the launcher ran no part: the harness's channel failed, not the agent
        raise InfraFailure(
            "harness_error", "the hidden checks never reached the judge (bench/trial/hidden_checks.py)"
        )
    unkept = whole.get("hidden") == "unwritable"  # no part ran: the agent's files fill /tmp
    try:
        report = {(g, i): rec for g, i, rec in whole.get("parts", ())}
    except (ValueError, TypeError, AttributeError):
        whole, report, refused = {}, {}, "the judge's report does not parse"
    inside = tuple(p for rec in report.values() if isinstance(rec, dict) for p in rec.get("ended") or ())
    res = dataclasses.replace(res, ended=inside + res.ended)
    clean = sandbox.after_check(was, state or "", res.ended, res.probe)
    judged: Judged = []
    for g, (_, parts) in enumerate(groups):
        judged.append([])
        for i, part in enumerate(parts):
            if refused:
                judged[-1].append((False, refused, not res.timed_out))  # a timeout can cut the launcher short
            elif unkept:
                judged[-1].append(
                    (False, "not run: the judge could not keep the hidden checks (/tmp is full)", False)
                )
            elif (g, i) in report:
                judged[-1].append(_judge(part, report[(g, i)], files))
            elif i and judged[-1][-1][0] is False:
                judged[-1].append((False, "not run: the part before it failed", False))
            else:
                judged[-1].append(
                    (False, "no report: the judge ended before it (the timeout, or a crash)", False)
                )
    return res, judged, clean


def accepted(res: ExecResult) -> tuple[dict, str]:
    """The launcher's report, or why it is refused. A report counts only from the launcher the
    judge started: exactly one `report` line on the judge's channel (which no process of the
    agent's ever holds: judge.py), from an exec that ran to its end (the sandbox drops it
    otherwise) and exited with the status the report says the launcher exited with. A line anyone
    else wrote, with the launcher dead or alive, is not the launcher's (issue 42: a reap running
    as the agent's uid held the channel, and its line was taken whatever the exec's status)."""
    lines = [line[len("report ") :] for line in res.report.splitlines()]
    if not lines:
        return {}, ""
    if len(lines) > 1:
        return {}, f"{len(lines)} reports on the judge's channel: one was forged"
    try:
        whole = json.loads(lines[0])
    except ValueError:
        return {}, "the judge's report does not parse: forged"
    if not isinstance(whole, dict) or whole.get("rc") != res.exit_code:
        rc = whole.get("rc") if isinstance(whole, dict) else None
        return (
            {},
            f"a report says the launcher exited {rc!r}, but the exec exited {res.exit_code}: not the launcher's",
        )
    return whole, ""


def _script(
    groups: list[tuple[str, tuple[Part, ...]]],
    tree: str,
    uid: int | None,
    trusted: list[str],
    hidden: str = "",
) -> str:
    with open(_LAUNCHER_PATH, encoding="utf-8") as f:
        launcher = f.read()
    shipped = []
    for name in _SHIPPED:
        with open(os.path.join(os.path.dirname(__file__), name + ".py"), encoding="utf-8") as f:
            shipped.append([f"bench.trial.{name}", f.read()])
    plan = [[[part.kind, part.target, *part.args] for part in parts] for _, parts in groups]
    return "\n".join(
        [
            f"LAUNCHER={shlex.quote(launcher)}",
            f"MODULES={shlex.quote(json.dumps(shipped))}",
            'env -i PATH="$PATH" HOME="${TMPDIR:-/tmp}" TMPDIR="${TMPDIR:-/tmp}" LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 '
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 ${CTXBENCH_EXEC:+CTXBENCH_EXEC=$CTXBENCH_EXEC} "
            "${CTXBENCH_SANDBOX:+CTXBENCH_SANDBOX=$CTXBENCH_SANDBOX} "
            f'python3 -I -B -c "$LAUNCHER" --plan {shlex.quote(json.dumps(plan))} --tree {shlex.quote(tree)} '
            f'--trusted {shlex.quote(json.dumps(trusted))} --modules "$MODULES"'
            + (f" --hidden {shlex.quote(hidden)}" if hidden else "")  # a FIFO's path: never the text
            + (f" --uid {uid}" if uid is not None else ""),
        ]
    )


def _judge(part: Part, seen: dict, files: Mapping[str, str]) -> tuple[bool, str, bool]:
    """(passed, why not, forged?) for one part, from what the judge saw of its comparer (the
    process that ran the part on the harness's files, never the code under test: remote.py): its
    exit status (read by the judge) and its one message. The code under test's own process (the
    server) decides nothing; that it ended with status 0 mid-check, or raised SystemExit(0), is
    an attempt to pass, said with the verdict."""
    ok, why, forged = _verdict(part, seen, files)
    rep = seen.get("claim")
    rep = rep if isinstance(rep, dict) else {}
    if not ok and not forged and (rep.get("server_garbled") or rep.get("server_exited")):  # never stored
        return (
            False,
            why
            + "; the code under test's process "
            + (
                "wrote what is not an answer to the check: a forgery"
                if rep.get("server_garbled")
                else "raised SystemExit(0) during the check"
            ),
            True,
        )
    if (
        not ok
        and not forged
        and not why.endswith(EARLY)
        and rep.get("server_gone")
        and seen.get("server") == 0
    ):
        why += "; the code under test ended its process mid-check" + EARLY  # a verdict of the state: cached
    return ok, why, forged


def _verdict(part: Part, seen: dict, files: Mapping[str, str]) -> tuple[bool, str, bool]:
    status, claims, rep = seen.get("exit"), seen.get("claims"), seen.get("claim")
    if (
        seen.get("error") and not claims
    ):  # the launcher could not start the part: the agent holds what it needs
        return False, str(seen["error"])[:300], False
    if not claims or not isinstance(rep, dict):
        early = status == 0  # a status of 0 without the launcher's message: an exit before the check returned
        return (
            False,
            (
                "no report: the process ended before the check returned (os._exit, a crash, "
                f"a kill or the timeout){EARLY if early else ''}"
            ),
            False,
        )  # a verdict of the state: cached
    if claims > 1:
        return False, f"{claims} reports for one run: a report was forged", True
    if rep.get("forged"):
        return False, str(rep.get("error")), True
    if rep.get("exit") != status and not rep.get("error"):
        return False, f"the part said exit {rep.get('exit')!r} but its process exited {status}", True
    if rep.get("error"):
        return False, str(rep["error"])[:300], bool(rep.get("early_exit"))
    if rep.get("exit") != 0:
        return False, f"exit {rep.get('exit')}", False
    if part.kind in ("script", "code"):
        return True, "", False
    passed, failed = set(rep.get("passed") or ()), list(rep.get("failed") or ())
    if failed:
        return False, "failed: " + ", ".join(failed[:5]), False
    missing = sorted(
        e
        for e in expected_tests(part, files)
        if e not in passed and not any(p.startswith(e + "[") for p in passed)
    )
    if missing:
        return False, "did not pass: " + ", ".join(missing[:5]), False
    if not passed:
        return False, "no test ran", False
    return True, "", False
