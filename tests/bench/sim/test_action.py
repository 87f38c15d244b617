"""Action: temptation, stale edits, failure handling, and blindness to strategy and arm."""

from __future__ import annotations

import dataclasses

from omegaconf import OmegaConf

from bench.core import render
from bench.core.toolspecs import TOOLS
from bench.core.types import Completion, Message
from bench.sim.provider import SimProvider
from tests.helpers.configs import model_config
from tests.helpers.sim_probes import API_V2, damage_rate, first_edit, memory_context
from tests.helpers.sim_world import (
    API,
    API_V1,
    INV,
    World,
    filler,
    make_task,
    prefix,
    provider,
    read_turn,
    run,
)

SEEDS = range(2000, 2400)


def s01_context(task, *, drop_invariant: bool = False, pad: int = 0, api: str = API_V1) -> list[Message]:
    head = prefix(task)
    if drop_invariant:  # the same context, minus the one line that states the invariant
        line = render.invariant_line(INV) + "\n"
        assert line in head[1].content
        head[1] = Message("user", head[1].content.replace(line, ""))
    notes = [filler(pad, 1)] if pad else []
    return [
        *head,
        *notes,
        Message("user", render.current_step_block(task.steps[0])),
        *read_turn(API, api, "r1"),
    ]


def removes_trap(c: Completion) -> bool:
    return any(
        t.name == "edit_file"
        and "_compat_fetch" in t.args["search"]
        and "_compat_fetch" not in t.args["replace"]
        for t in c.tool_calls
    )


def trap_rate(msgs: list[Message], task, model: str = "sim", **override: float) -> float:
    sim = provider(model, task, **override)
    return sum(removes_trap(sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=s)) for s in SEEDS) / len(
        SEEDS
    )


def test_removing_the_invariant_line_raises_trap_removal_from_zero_to_p_tempt():
    task = make_task(text_pad=0)
    with_inv, without = (
        trap_rate(s01_context(task), task),
        trap_rate(s01_context(task, drop_invariant=True), task),
    )
    print(f"trap removal: invariant visible {with_inv:.3f}, line removed {without:.3f} (p_tempt 0.5)")
    assert with_inv == 0.0
    assert abs(without - 0.5) < 0.08


def test_in_a_longer_context_a_visible_invariant_still_mostly_protects():
    task = make_task(text_pad=0)
    with_inv = trap_rate(s01_context(task, pad=6000), task)
    without = trap_rate(s01_context(task, drop_invariant=True, pad=6000), task)
    print(f"trap removal with 6k of notes: invariant visible {with_inv:.3f}, removed {without:.3f}")
    assert with_inv < 0.1 and abs(without - 0.5) < 0.08


def test_controls_oracle_and_p_tempt_zero_never_remove_the_trap():
    task = make_task(text_pad=0)
    assert trap_rate(s01_context(task, drop_invariant=True), task, "oracle") == 0.0
    assert trap_rate(s01_context(task, drop_invariant=True), task, p_tempt=0.0) == 0.0


def step_turn(msgs: list[Message], c: Completion, world: World) -> None:
    msgs.append(c.as_message())
    for call in c.tool_calls:
        msgs.append(Message("tool", world.apply(call.name, call.args), tool_call_id=call.id, name=call.name))


def test_stale_copy_makes_a_replace_fail_and_a_fresh_read_fixes_it():
    """The repo moved under the sim (drift): only the old block is in view."""
    task = make_task(text_pad=0)
    sim, world = provider("oracle", task), World({API: API_V2})
    msgs = s01_context(task)
    c = first_edit(sim, msgs, 1)
    assert [t.name for t in c.tool_calls] == ["edit_file"]
    step_turn(msgs, c, world)
    assert msgs[-1].content.startswith("ERROR")
    c = first_edit(sim, msgs, 1)  # it re-reads the file the edit failed on
    assert [(t.name, t.args) for t in c.tool_calls] == [("read_file", {"path": API})]
    step_turn(msgs, c, world)
    c = first_edit(sim, msgs, 1)  # and redoes the edit on the fresh copy
    step_turn(msgs, c, world)
    assert msgs[-1].content.startswith("edited") and "retries=0, timeout=10" in world.files[API]
    assert first_edit(sim, msgs, 1).tool_calls[0].name == "submit_step"


def test_stale_copy_makes_a_write_clobber_and_a_visible_drift_note_prevents_it():
    task = make_task("write", text_pad=0)
    sim = provider("oracle", task)
    world = World({API: API_V2})
    step_turn(s01 := s01_context(task), first_edit(sim, s01, 1), world)
    assert "retries=0" not in world.files[API]  # clobbered: the outside change is gone
    world = World({API: API_V2})
    note = Message(
        "user",
        "CONSISTENCY NOTE: the repository changed since the last certified step, by commits "
        f"not yours:\nab12cd3 Other Dev: add retries\n {API} | 2 +-\n",
    )
    msgs = [*s01_context(task), note]
    c = first_edit(sim, msgs, 1)
    assert [(t.name, t.args) for t in c.tool_calls] == [("read_file", {"path": API})]
    step_turn(msgs, c, world)
    step_turn(msgs, first_edit(sim, msgs, 1), world)
    assert "retries=0, timeout=10" in world.files[API]


def test_imperfect_memory_of_a_file_deep_in_a_long_context_damages_edits():
    for mode in ("replace", "write"):
        task = make_task(mode, text_pad=0)
        deep, fresh = (
            damage_rate(task, memory_context(task, False)),
            damage_rate(task, memory_context(task, True)),
        )
        print(
            f"{mode}: damaged edits, newest copy deep in context {deep:.3f}, after a fresh read {fresh:.3f}"
        )
        assert 0.1 <= deep <= 0.4  # about (1 - recall) * p_stale
        assert fresh == 0.0
        assert damage_rate(task, memory_context(task, False), "oracle") == 0.0
        assert (
            damage_rate(task, memory_context(task, False), p_stale_replace_fail=0.0, p_stale_clobber=0.0)
            == 0.0
        )


def test_after_failed_checks_it_rereads_named_files_and_gives_up_after_max_attempts():
    task = make_task(text_pad=0)
    sim = provider("sim", task, max_attempts=2)
    msgs, world = (
        [*prefix(task), Message("user", render.current_step_block(task.steps[0]))],
        World(dict(task.files)),
    )
    failure = "FAILED tests/test_s01.py::test_it - AssertionError raised in pkg/api.py:4"
    reads_after_failure, texts = [], []
    for _ in range(20):
        c = sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=11)
        texts.append(c.content)
        if not c.tool_calls:
            break
        msgs.append(c.as_message())
        for call in c.tool_calls:
            if call.name == "submit_step":
                out = render.check_result("s01", False, 1, failure)
            else:
                out = world.apply(call.name, call.args)
                if call.name == "read_file" and any("[check:s01 failed" in m.content for m in msgs):
                    reads_after_failure.append(call.args["path"])
            msgs.append(Message("tool", out, tool_call_id=call.id, name=call.name))
    assert texts[-1].startswith("giving up on step s01")
    assert reads_after_failure.count("tests/test_s01.py") == 1 and reads_after_failure.count(API) == 1


def test_passed_step_or_no_step_ends_the_turn():
    task = make_task(text_pad=0)
    sim = provider("sim", task)
    assert sim.complete(tuple(prefix(task)), TOOLS, max_tokens=4096, seed=1).stop_reason == "end_turn"
    msgs = [*s01_context(task), Message("tool", render.check_result("s01", True, 0, ""), tool_call_id="x")]
    c = sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=1)
    assert c.stop_reason == "end_turn" and not c.tool_calls


def test_strategy_and_arm_in_the_config_do_not_change_actions():
    """Byte-identical messages under configs that differ only in strategy and arm."""
    task = make_task()
    _, transcript, _ = run(provider("sim", task), task, seed=4001)
    model = model_config("sim")
    cfgs = [
        OmegaConf.create(
            {"strategy": {"name": s}, "arm": {"name": a, "window": w, "drift": d}, "model": model, "rep": 1}
        )
        for s, a, w, d in (("raw", "baseline", None, False), ("ledger", "drift_compaction", 12000, True))
    ]
    outs = []
    for cfg in cfgs:
        sim = SimProvider.from_config(cfg.model)
        sim._loader = lambda tid: task  # the hand-built task, still found by its [task:] marker
        outs.append(
            [
                dataclasses.asdict(sim.complete(tuple(transcript[:n]), TOOLS, max_tokens=4096, seed=4001))
                for n in range(3, len(transcript) + 1)
            ]
        )
    assert outs[0] == outs[1]
