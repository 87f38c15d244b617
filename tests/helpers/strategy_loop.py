"""Hand-built tasks and a tiny scripted harness, to drive strategies without the real loop.

`run(strategy, task, ...)` plays a fixed script per step (read the touches, edit one, run
the check, submit) exactly as the harness contract says: a step notice at every step head,
one assistant message per turn, one tool message per call, compaction when `build` asks
for it (with a deterministic fake summariser), and certification with learned invariants.
The script does not depend on the strategy, so traces of different strategies line up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from bench.core import render
from bench.core.toolspecs import TOOLS
from bench.core.types import Message, ToolCall
from strategies.base import Built, Certified, State, StepHead, Strategy, Summary
from tasks.spec import Invariant, Step, StepPlan, TaskSpec


class FakeOracle:
    def edits_for(self, step_id: str, perceived: Mapping[str, str]) -> StepPlan:
        return StepPlan()

    def cleanups(self, perceived: Mapping[str, str], paths: tuple[str, ...]) -> tuple:
        return ()


def module_text(i: int, lines: int) -> str:
    body = [f'"""Module {i}: helpers for the fetch migration."""', "", "import logging", ""]
    for k in range(lines):
        body.append(f"def helper_{i}_{k}(url, timeout=3):\n    return fetch(url, timeout=timeout)  # call {k}\n")
    return "\n".join(body) + "\n"


def make_task(n_steps: int = 12, n_files: int = 6, file_lines: int = 12, seed: int = 1) -> TaskSpec:
    files = {f"pkg/mod_{i:02d}.py": module_text(i, file_lines) for i in range(n_files)}
    files["tests/test_mods.py"] = "def test_ok():\n    assert True\n"
    steps = []
    for k in range(1, n_steps + 1):
        sid = f"s{k:02d}"
        a, b = f"pkg/mod_{k % n_files:02d}.py", f"pkg/mod_{(k + 1) % n_files:02d}.py"
        establishes = (Invariant(f"e-{sid}", f"Callers migrated in {sid} keep passing `timeout=` by keyword.",
                                 stated=sid),) if k % 3 == 0 else ()
        steps.append(Step(id=sid, title=f"Migrate fetch callers in {a}",
                          instructions=f"Change every `fetch(url, timeout)` call in {a} to the keyword form; "
                                       f"keep {b} importing cleanly.",
                          touches=(a, b), check=f"python -m pytest -q tests/test_mods.py -k {sid}",
                          establishes=establishes))
    return TaskSpec(
        task_id=f"fake/{seed}/steps={n_steps}", family="fake", seed=seed, title="Migrate fetch() callers",
        text="Migrate every caller of `fetch` to the keyword-only `timeout=` signature, one module per step.",
        files=tuple(sorted(files.items())),
        invariants=(Invariant("shim", "The compatibility shim `fetch(url, *legacy)` stays until s08.", until="s08"),
                    Invariant("no-print", "Library code never prints; it logs.")),
        steps=tuple(steps), final_check="python -m pytest -q", protected=("tests/**",), traps=(), drift=(),
        test_command="python -m pytest -q", oracle=FakeOracle())


def sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def fake_summariser(messages: tuple[Message, ...]) -> str:
    """Keeps the invariant lines and the step it saw last; drops everything else."""
    text = "\n".join(m.content for m in messages)
    invs = dict(render.parse_invariants(text))
    step = render.parse_current_step(text) or "?"
    return "\n".join([f"Working on [step:{step}]."] + [f"[inv:{i}] {t}" for i, t in invs.items()])


@dataclass
class Trace:
    states: list[State] = field(default_factory=list)  # the state each turn's context was built from
    builts: list[Built] = field(default_factory=list)  # the context sent that turn
    step_heads: list[int] = field(default_factory=list)  # turn index of each step's first turn
    compactions: list[tuple[int, int, int]] = field(default_factory=list)  # (turn, before, after)
    requests: list[tuple[Message, ...]] = field(default_factory=list)  # summariser calls


def call(i: str, name: str, **args: object) -> ToolCall:
    return ToolCall(id=i, name=name, args=dict(args))


def run(strategy: Strategy, task: TaskSpec, *, window: int = 200_000, max_output: int = 1000,
        drift_before: str | None = None, fail_first: str | None = None,
        summariser: Callable[[tuple[Message, ...]], str] = fake_summariser) -> Trace:
    repo = dict(task.files)
    commit = sha("base")
    transcript: list[Message] = []
    certified: list[Certified] = []
    learned: list[Invariant] = []
    log: list[str] = []
    summary: Summary | None = None
    tr = Trace()
    turn = 0
    for index, step in enumerate(task.steps):
        drift_note = None
        if step.id == drift_before:
            path = step.touches[0]
            repo[path] += "\n\ndef added_by_teammate(url):\n    return fetch(url, 5)\n"
            old, commit = commit, sha(commit + "drift")
            log.append(f"{commit[:7]} Add caller (Dana <dana@example.com>)")
            drift_note = f"HEAD moved {old[:12]} -> {commit[:12]} by an outside commit touching {path}."
        tree = "\n".join(["## main", *log, "", *[f" {p} | 2 +-" for p, _ in task.files if repo[p] != dict(task.files)[p]]])
        head = StepHead(tree=tree, files=tuple((p, repo[p]) for p in step.touches), repo_commit=commit,
                        drift_note=drift_note)
        step_start = len(transcript)
        transcript.append(Message(role="user", content=render.current_step_block(step)))
        tr.step_heads.append(turn)
        a, b = step.touches
        script: list[tuple[str, ToolCall]] = [
            ("I read the files first.", call(f"{step.id}-1", "read_file", path=a)),
            ("", call(f"{step.id}-2", "read_file", path=b)),
            ("Switching to the keyword form.", call(f"{step.id}-3", "edit_file", path=a,
                                                     search="timeout=timeout)  # call 0",
                                                     replace=f"timeout=timeout)  # call 0, {step.id}")),
            ("", call(f"{step.id}-4", "run", command=step.check)),
            ("Done.", call(f"{step.id}-5", "submit_step", notes=f"{a} now uses timeout= by keyword",
                           invariants=[f"{a} calls fetch with timeout= only"])),
        ]
        if step.id == fail_first:
            first = script[4][1]
            script.insert(4, ("Done, I think.", replace(first, id=first.id + "a")))
        last_failure = None
        attempt = 1
        for j, (text, tc) in enumerate(script):
            state = State(task=task, tools=TOOLS, transcript=tuple(transcript), turn=turn, step_index=index,
                          step_start=step_start, attempt=attempt, certified=tuple(certified),
                          learned=tuple(learned), last_failure=last_failure, head=head, summary=summary,
                          window=window, max_output=max_output)
            built = strategy.build(state)
            if built.compact:
                request = strategy.summary_request(state)
                tr.requests.append(request)
                summary = Summary(summariser(request), upto=len(transcript))
                state = replace(state, summary=summary)
                before = built.tokens
                built = strategy.build(state)
                assert not built.compact, "build asked to compact twice for the same state"
                tr.compactions.append((turn, before, built.tokens))
            tr.states.append(state)
            tr.builts.append(built)
            turn += 1
            transcript.append(Message(role="assistant", content=text, tool_calls=(tc,)))
            if tc.name == "read_file":
                result = render.file_block(tc.args["path"], repo[tc.args["path"]])
            elif tc.name == "edit_file":
                p = tc.args["path"]
                repo[p] = repo[p].replace(tc.args["search"], tc.args["replace"], 1)
                result = f"edited {p}\n" + render.file_block(p, repo[p])
            elif tc.name == "run":
                result = "exit=0\n1 passed in 0.01s"
            elif step.id == fail_first and j == 4:
                last_failure = "E   AssertionError: fetch() got a positional timeout\n1 failed"
                attempt += 1
                result = render.check_result(step.id, False, 1, last_failure)
            else:
                new = list(step.establishes) + [Invariant(f"n-{step.id}-1", tc.args["invariants"][0], stated=step.id)]
                result = "\n".join([render.check_result(step.id, True, 0, "1 passed")]
                                   + [render.invariant_line(i) for i in new])
                old, commit = commit, sha(commit + step.id)
                log.append(f"{commit[:7]} {step.id}: {step.title}")
                certified.append(Certified(step.id, step.check, commit, tc.args["notes"], f" {a} | 2 +-\n 1 file changed"))
                learned.extend(new)
            transcript.append(Message(role="tool", content=result, tool_call_id=tc.id, name=tc.name))
    return tr


def hand_state(task: TaskSpec | None = None, **kw: object) -> State:
    """A small hand-built state at the head of step 2 of `task` (override any field)."""
    task = task or make_task(n_steps=4)
    step = task.steps[1]
    notice = Message(role="user", content=render.current_step_block(step))
    base: dict[str, object] = dict(
        task=task, tools=TOOLS, transcript=(notice,), turn=5, step_index=1, step_start=0, attempt=1,
        certified=(Certified("s01", task.steps[0].check, "a" * 40, "keep the shim", " pkg/mod_01.py | 2 +-"),),
        learned=(Invariant("n-s01-1", "mod_01 uses timeout= by keyword", stated="s01"),), last_failure=None,
        head=StepHead(tree="## main\n1234567 s01: done", files=tuple((p, dict(task.files)[p]) for p in step.touches),
                      repo_commit="b" * 40),
        summary=None, window=100_000, max_output=1000)
    base.update(kw)
    return State(**base)  # type: ignore[arg-type]


def turn(i: int, size: int = 50) -> tuple[Message, Message]:
    """One assistant `run` call and its tool result of about `size` words."""
    return (Message(role="assistant", content=f"turn {i}", tool_calls=(ToolCall(f"c{i}", "run", {"command": "ls"}),)),
            Message(role="tool", content=f"out{i} " + "word " * size, tool_call_id=f"c{i}", name="run"))


def in_step(n_before: int, n_after: int, size: int = 50, **kw: object) -> State:
    """`hand_state()` with `n_before` turns before the step notice and `n_after` after it."""
    base = hand_state()
    msgs = [m for i in range(n_before) for m in turn(i, size)]
    start = len(msgs)
    msgs.append(base.transcript[0])
    msgs += [m for i in range(n_before, n_before + n_after) for m in turn(i, size)]
    return replace(base, transcript=tuple(msgs), step_start=start, **kw)  # type: ignore[arg-type]
