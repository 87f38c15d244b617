"""Probes of the simulated model shared by its tests: a context whose only protection of a
shim is what a test adds, the rate at which the sim removes the shim, a file remembered in
two versions, and the rate of damaged edits from such a memory."""

from __future__ import annotations

from bench.core import render
from bench.core.toolspecs import TOOLS
from bench.core.types import Completion, Message, ToolCall
from bench.sim.provider import SimProvider
from tests.helpers.sim_world import API, API_V1, INV, World, filler, make_task, prefix, provider, read_turn

API_V2 = API_V1.replace("def fetch(url, *legacy):", "def fetch(url, *legacy, retries=0):")
SHIM_SEEDS = range(5000, 5400)
DAMAGE_SEEDS = range(2000, 2400)
FACTS = [f"f{i}" for i in range(10)]
FACTS_MSG = Message(
    "user", "Decisions so far:\n" + "\n".join(f"[inv:{f}] Constraint {f} stays in force." for f in FACTS)
)


def first_edit(sim: SimProvider, msgs: list[Message], seed: int) -> Completion:
    c = sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=seed)
    assert c.stop_reason == "tool_use"
    return c


def shim_context(task, *extra: Message) -> list[Message]:
    """s01 with the task's own invariant line removed: only `extra` can protect the shim."""
    head = prefix(task)
    head[1] = Message("user", head[1].content.replace(render.invariant_line(INV) + "\n", ""))
    return [
        *head,
        *extra,
        Message("user", render.current_step_block(task.steps[0])),
        *read_turn(API, API_V1, "r1"),
    ]


def removes_shim(c: Completion) -> bool:
    return any(t.name == "edit_file" and "_compat_fetch" in t.args["search"] for t in c.tool_calls)


def shim_removal_rate(msgs: list[Message], **override) -> float:
    task = make_task(text_pad=0)
    sim = provider("sim", task, **override)
    return sum(
        removes_shim(sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=s)) for s in SHIM_SEEDS
    ) / len(SHIM_SEEDS)


def memory_context(task, fresh_read: bool) -> list[Message]:
    """Two versions of the file in view: v1 early, the newest (v2) deep in the middle of a
    long transcript. The repository holds v2."""
    head = prefix(task)
    old = read_turn(API, API_V1, "r0")
    newer = [
        Message(
            "assistant", "", (ToolCall("e0", "edit_file", {"path": API, "search": "x", "replace": "y"}),)
        ),
        Message(
            "tool", f"edited {API}\n" + render.file_block(API, API_V2), tool_call_id="e0", name="edit_file"
        ),
    ]
    msgs = [
        *head,
        filler(8000, 1),
        *old,
        filler(15000, 2),
        *newer,
        filler(30000, 3),
        Message("user", render.current_step_block(task.steps[0])),
    ]
    return msgs + (read_turn(API, API_V2, "r9") if fresh_read else [])


def damage_rate(
    task, msgs: list[Message], model: str = "sim", mechanisms: dict | None = None, **override: float
) -> float:
    """Share of seeds whose first edit errs or loses the newest version's `retries=0`."""
    sim, bad = provider(model, task, mechanisms, **override), 0
    for seed in DAMAGE_SEEDS:
        world = World({API: API_V2})
        c = first_edit(sim, msgs, seed)
        results = [world.apply(t.name, t.args) for t in c.tool_calls if t.name != "read_file"]
        bad += any(r.startswith("ERROR") for r in results) or "retries=0" not in world.files[API]
    return bad / len(DAMAGE_SEEDS)
