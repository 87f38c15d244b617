"""Hand-built tasks and states for strategy tests, and `run`: a strategy driven through the REAL loop.

`run(strategy, task, ...)` plays a fixed script per step (read the touches, edit one, run the
check, submit) through the harness's step driver and ctxbench's own loop (`bench.trial.driver`, `bench.trial.loop`), with the scripted provider and
LocalSandbox: the harness's own step heads (FILES read fresh, and re-read after a compaction),
attempts counted from 0, certification by a check run in the sandbox, drift committed by the
harness. The script does not depend on the strategy, so traces of different strategies line up.
What the trace holds is read from the trial's event log through the one reader (ctxlog/reader.py),
beside the (state, built) pairs the strategy saw and returned.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.core import render
from bench.core.toolspecs import TOOLS
from bench.core.types import Message, ToolCall
from bench.eventlog.writer import EventLog
from bench.providers.scripted import ScriptedProvider
from bench.sandbox import create
from bench.trial.driver import Limits, StepDriver
from bench.trial.loop import LoopPlayer, LoopSettings
from ctxlog import events as ev
from ctxlog.reader import Log
from strategies.base import Built, Certified, State, StepHead, Strategy
from tasks.spec import Drift, Invariant, Step, StepPlan, TaskSpec
from tests.helpers.configs import sandbox_config


class FakeOracle:
    def edits_for(self, step_id: str, perceived: Mapping[str, str]) -> StepPlan:
        return StepPlan()

    def cleanups(self, perceived: Mapping[str, str], paths: tuple[str, ...]) -> tuple:
        return ()


def module_text(i: int, lines: int) -> str:
    body = [f'"""Module {i}: helpers for the fetch migration."""', "", "import logging", ""]
    for k in range(lines):
        body.append(
            f"def helper_{i}_{k}(url, timeout=3):\n    return fetch(url, timeout=timeout)  # call {k}\n"
        )
    return "\n".join(body) + "\n"


def make_task(n_steps: int = 12, n_files: int = 6, file_lines: int = 12, seed: int = 1) -> TaskSpec:
    files = {f"pkg/mod_{i:02d}.py": module_text(i, file_lines) for i in range(n_files)}
    files["tests/test_mods.py"] = "def test_ok():\n    assert True\n"
    # A step's check: its id is in the first file it touches (the script's edit writes it).
    files["tests/check_step.py"] = (
        "def main(args):\n    step, path = args\n    return 0 if step in open(path).read() else 1\n"
    )
    steps = []
    for k in range(1, n_steps + 1):
        sid = f"s{k:02d}"
        a, b = f"pkg/mod_{k % n_files:02d}.py", f"pkg/mod_{(k + 1) % n_files:02d}.py"
        establishes = (
            (
                Invariant(
                    f"e-{sid}", f"Callers migrated in {sid} keep passing `timeout=` by keyword.", stated=sid
                ),
            )
            if k % 3 == 0
            else ()
        )
        steps.append(
            Step(
                id=sid,
                title=f"Migrate fetch callers in {a}",
                instructions=f"Change every `fetch(url, timeout)` call in {a} to the keyword form; "
                f"keep {b} importing cleanly.",
                touches=(a, b),
                check=f"python3 -B tests/check_step.py {sid} {a}",
                establishes=establishes,
            )
        )
    return TaskSpec(
        task_id=f"fake/{seed}/steps={n_steps}",
        family="fake",
        seed=seed,
        title="Migrate fetch() callers",
        text="Migrate every caller of `fetch` to the keyword-only `timeout=` signature, one module per step.",
        files=tuple(sorted(files.items())),
        invariants=(
            Invariant("shim", "The compatibility shim `fetch(url, *legacy)` stays until s08.", until="s08"),
            Invariant("no-print", "Library code never prints; it logs."),
        ),
        steps=tuple(steps),
        final_check="python3 -B -c pass",
        protected=("tests/**",),
        traps=(),
        drift=(),
        test_command="python -m pytest -q",
        oracle=FakeOracle(),
    )


@dataclass
class Trace:
    states: list[State] = field(default_factory=list)  # the state each turn's context was built from
    builts: list[Built] = field(default_factory=list)  # the context sent that turn
    step_heads: list[int] = field(default_factory=list)  # turn index of each step's first turn
    compactions: list[tuple[int, int, int]] = field(default_factory=list)  # (turn, before, after)
    requests: list[tuple[dict, ...]] = field(default_factory=list)  # summariser calls, as logged
    log: Log | None = None


class Recording:
    """The strategy under test, keeping what each turn's build saw and returned (a build that
    asked to compact is replaced by the build after the summary, as the loop sends that one)."""

    def __init__(self, inner: Strategy) -> None:
        self.inner, self.pairs = inner, []

    def __getattr__(self, name: str) -> Any:  # requires_handoff, fresh_session_per_step, ...
        return getattr(self.inner, name)

    def build(self, state: State) -> Built:
        built = self.inner.build(state)
        if self.pairs and self.pairs[-1][1].compact:
            assert not built.compact, "build asked to compact twice for the same state"
            self.pairs.pop()
        self.pairs.append((state, built))
        return built

    def summary_request(self, state: State) -> tuple[Message, ...]:
        return self.inner.summary_request(state)


def script_for(task: TaskSpec, fail_first: str | None = None) -> list[list[dict[str, Any]]]:
    """Per step: read both touches, edit the first, run the check, submit (for `fail_first`, a
    submit before the edit, which its check fails)."""
    turns = []
    for step in task.steps:
        a, b = step.touches
        submit = {
            "name": "submit_step",
            "args": {
                "notes": f"{a} now uses timeout= by keyword",
                "invariants": [f"{a} calls fetch with timeout= only"],
            },
        }
        edit = {
            "name": "edit_file",
            "args": {
                "path": a,
                "search": "timeout=timeout)  # call 0",
                "replace": f"timeout=timeout)  # call 0, {step.id}",
            },
        }
        steps = [
            [{"name": "read_file", "args": {"path": a}}],
            [{"name": "read_file", "args": {"path": b}}],
            [edit],
            [{"name": "run", "args": {"command": step.check}}],
            [submit],
        ]
        if step.id == fail_first:
            steps.insert(2, [submit])
        turns += steps
    return turns


def with_drift(task: TaskSpec, before: str) -> TaskSpec:
    """An outside commit before step `before`: a new old-style caller in the step's first file."""
    step = next(s for s in task.steps if s.id == before)
    path = step.touches[0]
    content = dict(task.files)[path] + "\n\ndef added_by_teammate(url):\n    return fetch(url, 5)\n"
    return replace(
        task,
        drift=(
            Drift("d1", "new_caller", before, "Add caller", "Dana <dana@example.com>", ((path, content),)),
        ),
    )


def run(
    strategy: Strategy,
    task: TaskSpec,
    *,
    window: int = 200_000,
    max_output: int = 1000,
    drift_before: str | None = None,
    fail_first: str | None = None,
) -> Trace:
    """Play `task` with `strategy` through the real loop (see the module docstring)."""
    task = with_drift(task, drift_before) if drift_before else task
    recording = Recording(strategy)
    cfg = sandbox_config("local")
    sandbox = create(cfg, dict(task.files), "strategy-test")
    try:
        with tempfile.TemporaryDirectory(prefix="ctxbench-strategy-") as tmp:
            events = EventLog(Path(tmp) / "events.jsonl")
            limits = Limits(
                max_turns=10_000,
                max_turns_per_step=16,
                deadline=time.monotonic() + 600,
                drift=drift_before is not None,
            )
            player = LoopPlayer(
                recording,
                ScriptedProvider(script_for(task, fail_first)),  # type: ignore[arg-type]
                LoopSettings(window=window, max_output=max_output, seed=0),
            )
            StepDriver(task, sandbox, events, limits).run(player)
            events.close()
    finally:
        sandbox.close()
    log = Log.from_records(events.records)
    return Trace(
        states=[s for s, _ in recording.pairs],
        builts=[b for _, b in recording.pairs],
        step_heads=[int(e.turn or 0) for e in log.of(ev.StepStart)],
        compactions=[(int(c.turn or 0), c.tokens_before, c.tokens_after) for c in log.of(ev.Compaction)],
        requests=[c.messages or () for c in log.calls if c.context.purpose == "compaction"],
        log=log,
    )


def hand_state(task: TaskSpec | None = None, **kw: object) -> State:
    """A small hand-built state at the head of step 2 of `task` (override any field)."""
    task = task or make_task(n_steps=4)
    step = task.steps[1]
    notice = Message(role="user", content=render.current_step_block(step))
    base: dict[str, object] = dict(
        task=task,
        tools=TOOLS,
        transcript=(notice,),
        turn=5,
        step_index=1,
        step_start=0,
        attempt=1,
        certified=(
            Certified("s01", task.steps[0].check, "a" * 40, "keep the shim", " pkg/mod_01.py | 2 +-"),
        ),
        learned=(Invariant("n-s01-1", "mod_01 uses timeout= by keyword", stated="s01"),),
        last_failure=None,
        head=StepHead(
            tree="## main\n1234567 s01: done",
            files=tuple((p, dict(task.files)[p]) for p in step.touches),
            repo_commit="b" * 40,
        ),
        summary=None,
        window=100_000,
        max_output=1000,
    )
    base.update(kw)
    return State(**base)  # type: ignore[arg-type]


def turn(i: int, size: int = 50) -> tuple[Message, Message]:
    """One assistant `run` call and its tool result of about `size` words."""
    return (
        Message(
            role="assistant", content=f"turn {i}", tool_calls=(ToolCall(f"c{i}", "run", {"command": "ls"}),)
        ),
        Message(role="tool", content=f"out{i} " + "word " * size, tool_call_id=f"c{i}", name="run"),
    )


def in_step(n_before: int, n_after: int, size: int = 50, **kw: object) -> State:
    """`hand_state()` with `n_before` turns before the step notice and `n_after` after it."""
    base = hand_state()
    msgs = [m for i in range(n_before) for m in turn(i, size)]
    start = len(msgs)
    msgs.append(base.transcript[0])
    msgs += [m for i in range(n_before, n_before + n_after) for m in turn(i, size)]
    return replace(base, transcript=tuple(msgs), step_start=start, **kw)  # type: ignore[arg-type]
