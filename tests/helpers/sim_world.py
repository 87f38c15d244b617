"""A hand-built toy task, its oracle, and a tiny in-memory harness to run the sim on it.

Independent of the real task families: the sim gets this task through `task_loader`, still
only by the `[task:toy/1]` marker in the context. Used by the sim, serve and provider tests.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from bench.core import render
from bench.core.tokens import count_text
from bench.core.toolspecs import TOOLS
from bench.core.types import Message, ToolCall
from bench.sim.provider import SimProvider
from tasks.spec import Cleanup, Edit, Invariant, Step, StepPlan, TaskSpec, Trap
from tests.helpers.configs import model_config

TASK_ID = "toy/1"
API = "pkg/api.py"
CLIENT = "pkg/client.py"
PROBE = "probe.txt"
SHIM = (
    "\n\ndef _compat_fetch(*args):\n"
    '    # Called by name from plugins (getattr(api, "_compat_fetch")); looks unused here.\n'
    "    return fetch(*args)\n"
)
API_V1 = '"""HTTP helpers."""\n\n\ndef fetch(url, *legacy):\n    return ("GET", url, legacy)\n' + SHIM
CLIENT_V1 = 'from pkg.api import fetch\n\n\ndef get_user(uid):\n    return fetch(f"/users/{uid}", "v1")\n'
INV = Invariant("keep_compat", "pkg/api.py keeps _compat_fetch until s03: plugins call it by name.")
INV_LATE = Invariant(
    "client_timeout", "Client calls keep passing an explicit timeout from now on.", stated="s02"
)


class ToyOracle:
    """What a competent engineer does, and the tidy-up the shim invites, from perceived files only."""

    def __init__(self, mode: str = "replace") -> None:
        self.mode = mode  # "replace": search/replace edits; "write": whole-file writes

    def _change(self, path: str, src: str, old_line_start: str, transform) -> tuple[Edit, ...]:
        lines = src.split("\n")
        for i, line in enumerate(lines):
            if line.startswith(old_line_start) and "timeout" not in line:
                new = transform(line)
                if self.mode == "write":
                    return (Edit(path, "write", content="\n".join(lines[:i] + [new] + lines[i + 1 :])),)
                return (Edit(path, "replace", search=line, replace=new),)
        return ()

    def edits_for(self, step_id: str, perceived: Mapping[str, str]) -> StepPlan:
        if step_id == "s01":
            if API not in perceived:
                return StepPlan(reads=(API,))
            return StepPlan(
                edits=self._change(
                    API, perceived[API], "def fetch(", lambda ln: ln.replace("):", ", timeout=10):")
                )
            )
        if step_id == "s02":
            if CLIENT not in perceived:
                return StepPlan(reads=(CLIENT,))
            return StepPlan(
                edits=self._change(
                    CLIENT, perceived[CLIENT], "    return fetch(", lambda ln: ln[:-1] + ", timeout=5)"
                )
            )
        if step_id == "s03":  # the probe: its hand-off restates what it recalls
            return StepPlan(edits=(Edit(PROBE, "write", content="probe\n"),))
        raise KeyError(step_id)

    def cleanups(self, perceived: Mapping[str, str], paths: tuple[str, ...]) -> tuple[Cleanup, ...]:
        """The shim looks unused: nothing visible calls `_compat_fetch`."""
        if API not in paths or SHIM not in perceived.get(API, ""):
            return ()
        return (
            Cleanup(
                f"shim:{API}",
                ("_compat_fetch",),
                (Edit(API, "replace", search=SHIM, replace="\n"),),
                "delete the unused _compat_fetch shim",
            ),
        )


def make_task(
    mode: str = "replace", invariants: tuple[Invariant, ...] = (INV,), text_pad: int = 60
) -> TaskSpec:
    steps = (
        Step("s01", "Give fetch a timeout", "Add `timeout=10` to fetch.", (API,), "check s01"),
        Step(
            "s02",
            "Use the timeout in the client",
            "Pass timeout=5 from get_user.",
            (CLIENT,),
            "check s02",
            establishes=(INV_LATE,),
        ),
        Step("s03", "Write the probe", "Write probe.txt.", (PROBE,), "check s03"),
    )
    # A realistic task statement, long enough that the stable prefix is cacheable (>= 1024 tokens).
    text = "Migrate the HTTP helpers to take timeouts, in small steps.\n" + "\n".join(
        f"Background {i}: callers in batch {i} keep working while the migration proceeds."
        for i in range(text_pad)
    )
    return TaskSpec(
        task_id=TASK_ID,
        family="toy",
        seed=1,
        title="Toy timeout migration",
        text=text,
        files=((API, API_V1), (CLIENT, CLIENT_V1)),
        invariants=invariants,
        steps=steps,
        final_check="check all",
        protected=(),
        traps=(Trap("compat", API, "keep_compat", "shim", "s03"),),
        drift=(),
        test_command="pytest -q",
        oracle=ToyOracle(mode),
    )


def params(name: str = "sim", **override: float) -> dict:
    return {**model_config(name)["params"], **override}


# The probes measure one mechanism at a time: looking at git / re-reading unprompted and
# competence errors (tests/bench/sim/test_explore.py) are off unless a test switches them on.
ISOLATED = {"exploration": False, "competence": False}


def provider(
    name: str = "sim", task: TaskSpec | None = None, mechanisms: dict | None = None, **override: float
) -> SimProvider:
    mechanisms = {**ISOLATED, **(mechanisms or {})}
    cfg = model_config(name)
    t = task or make_task()
    return SimProvider(
        params(name, **override),
        model_id=name,
        price=cfg["price"],
        window=cfg["window"],
        task_loader=lambda tid: t if tid == TASK_ID else _unknown(tid),
        mechanisms=mechanisms,
    )


def _unknown(tid: str) -> TaskSpec:
    raise KeyError(tid)


def prefix(task: TaskSpec) -> list[Message]:
    return [
        Message("system", render.SYSTEM_PROMPT + "\n\n" + render.policy_block(task)),
        Message("user", render.task_block(task)),
    ]


def filler(tokens: int, salt: int) -> Message:
    """A harness-note-like message of about `tokens` tokens with no markers in it."""
    rng = random.Random(salt)
    words = (
        "build",
        "log",
        "cache",
        "worker",
        "retry",
        "module",
        "queue",
        "parser",
        "token",
        "socket",
        "report",
        "schema",
        "handler",
        "index",
        "buffer",
        "metric",
        "session",
        "thread",
    )
    out, n = [], 0
    while n < tokens:
        line = " ".join(rng.choice(words) for _ in range(12)) + "."
        out.append(line)
        n += count_text(line) + 1
    return Message("user", "NOTE (unrelated output)\n" + "\n".join(out))


def read_turn(path: str, content: str, call_id: str) -> list[Message]:
    return [
        Message("assistant", "", (ToolCall(call_id, "read_file", {"path": path}),)),
        Message("tool", render.file_block(path, content), tool_call_id=call_id, name="read_file"),
    ]


class World:
    """The repository and the tools, as bench.trial.tools answers them, in memory."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = dict(files)

    def apply(self, name: str, args: dict) -> str:
        path = args.get("path", "")
        if name == "read_file":
            return (
                render.file_block(path, self.files[path]) if path in self.files else f"ERROR: no file {path}"
            )
        if name == "write_file":
            self.files[path] = args["content"]
            return f"wrote {path}\n{render.file_block(path, args['content'])}"
        if name == "edit_file":
            src = self.files.get(path, "")
            if src.count(args["search"]) != 1:
                return f"ERROR: search text not found exactly once in {path}; re-read the file and retry"
            self.files[path] = src.replace(args["search"], args["replace"])
            return f"edited {path}\n{render.file_block(path, self.files[path])}"
        if name == "delete_file":
            self.files.pop(path, None)
            return f"deleted {path}"
        if name == "git":
            return "(no output)"  # the toy world has no history
        return f"ERROR: unknown tool {name}"

    def check(self, step: str) -> bool:
        api, client = self.files.get(API, ""), self.files.get(CLIENT, "")
        return {
            "s01": "timeout=10" in api,
            "s02": "timeout=5" in client,
            "s03": PROBE in self.files and "_compat_fetch" in api,
        }[step]


def run(
    sim: SimProvider, task: TaskSpec, seed: int, max_turns: int = 40
) -> tuple[World, list[Message], list]:
    """A raw (append-only) trial of the toy task: (final world, transcript, completions)."""
    world, msgs, replies = World(dict(task.files)), prefix(task), []
    for step in task.steps:
        msgs.append(Message("user", render.current_step_block(step)))
        for _ in range(max_turns):
            c = sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=seed)
            replies.append(c)
            msgs.append(c.as_message())
            if not c.tool_calls:
                return world, msgs, replies
            passed = False
            for call in c.tool_calls:
                if call.name == "submit_step":
                    passed = world.check(step.id)
                    text = render.check_result(
                        step.id,
                        passed,
                        0 if passed else 1,
                        "" if passed else f"FAILED tests/test_{step.id}.py::test_it",
                    )
                    if passed and step.establishes:
                        text += "\n" + "\n".join(render.invariant_line(i) for i in step.establishes)
                else:
                    text = world.apply(call.name, call.args)
                msgs.append(Message("tool", text, tool_call_id=call.id, name=call.name))
            if passed:
                break
    return world, msgs, replies
