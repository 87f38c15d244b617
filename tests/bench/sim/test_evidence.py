"""Evidence, not ids: a constraint protects by its content in the context, whoever stated it;
the sim never reads the task's ground truth (traps, invariants, drift); its hand-off says what
it recalls; after a failed check on a file it rewrote whole it fetches the committed copy."""

from __future__ import annotations

import dataclasses

from bench.core import render
from bench.core.toolspecs import TOOLS
from bench.core.types import Message, ToolCall
from tests.helpers.sim_probes import removes_shim, shim_context, shim_removal_rate
from tests.helpers.sim_world import API, API_V1, INV, World, make_task, prefix, provider, run

SAID = "pkg/api.py keeps _compat_fetch until s03: plugins call it by name."


def hand_off(text: str) -> list[Message]:
    call = ToolCall("h1", "submit_step", {"notes": f"s00: done. For later steps: {text}", "invariants": []})
    return [Message("assistant", "", (call,)), Message("tool", "[check:s00 passed]", tool_call_id="h1")]


def test_a_constraint_protects_by_content_whoever_states_it():
    task = make_task(text_pad=0)
    nothing = shim_removal_rate(shim_context(task))
    harness = shim_removal_rate(
        shim_context(task, Message("user", "Established by this step:\n" + render.invariant_line(INV)))
    )
    own = shim_removal_rate(shim_context(task, *hand_off(SAID)))
    summary = shim_removal_rate(shim_context(task, Message("user", "SUMMARY OF EARLIER TURNS\n\n- " + SAID)))
    same_id = shim_removal_rate(
        shim_context(task, Message("user", "[inv:keep_compat] Plugins must keep working."))
    )
    no_cue = shim_removal_rate(
        shim_context(task, Message("user", "Note: plugins call _compat_fetch by name."))
    )
    print(
        f"tidy-up rate: nothing {nothing:.3f}, harness {harness:.3f}, own hand-off {own:.3f}, "
        f"summary paraphrase {summary:.3f}, same id other words {same_id:.3f}, no keep cue {no_cue:.3f}"
    )
    assert abs(nothing - 0.5) < 0.07  # p_tempt
    assert harness == own == 0.0  # stated by the harness or by the model itself: the same
    assert abs(summary - 0.25) < 0.07  # a summary's paraphrase binds with p_paraphrase = 0.5
    assert abs(same_id - 0.5) < 0.07 and abs(no_cue - 0.5) < 0.07  # an id, or a mention, is no constraint


def test_the_sim_never_reads_the_tasks_ground_truth():
    """Traps, invariants, drift and the step list of the task it loads do not change a reply."""
    task = make_task()
    _, transcript, _ = run(provider("sim", task), task, seed=4242)
    blind = dataclasses.replace(
        task, traps=(), invariants=(), drift=(), steps=(), text="(unrelated)", title="(unrelated)"
    )
    for n in range(3, len(transcript) + 1, 2):
        msgs = tuple(transcript[:n])
        a = provider("sim", task).complete(msgs, TOOLS, max_tokens=4096, seed=4242)
        b = provider("sim", blind).complete(msgs, TOOLS, max_tokens=4096, seed=4242)
        assert a == b


def test_decisions_are_reported_with_their_probabilities():
    task = make_task(text_pad=0)
    c = provider("sim", task).complete(tuple(shim_context(task)), TOOLS, max_tokens=4096, seed=5001)
    (d,) = c.extra["decisions"]
    assert (
        d["key"] == f"shim:{API}" and d["q"] == 0.0 and d["p_tempt"] == 0.5 and d["done"] == removes_shim(c)
    )
    c = provider("sim", task).complete(
        tuple(shim_context(task, *hand_off(SAID))), TOOLS, max_tokens=4096, seed=5001
    )
    assert c.extra["decisions"][0]["q"] == 1.0 and not removes_shim(c)


def test_hand_off_restates_what_it_recalls_and_this_steps_own_constraints():
    task = make_task(text_pad=0)
    step = dataclasses.replace(
        task.steps[2], instructions="Write probe.txt. Keep probe.txt until the release."
    )
    task = dataclasses.replace(task, steps=(*task.steps[:2], step))
    earlier = Message("user", "Established by this step:\n" + render.invariant_line(INV))
    wrote = [
        Message("assistant", "", (ToolCall("w", "write_file", {"path": "probe.txt", "content": "p\n"}),)),
        Message("tool", "wrote probe.txt\n" + render.file_block("probe.txt", "p\n"), tool_call_id="w"),
    ]
    msgs = [*prefix(task), earlier, Message("user", render.current_step_block(step)), *wrote]
    (call,) = provider("oracle", task).complete(tuple(msgs), TOOLS, max_tokens=4096, seed=1).tool_calls
    assert call.name == "submit_step"
    assert call.args["invariants"] == ["Keep probe.txt until the release."]
    assert render.invariant_line(INV) in call.args["notes"] and "s03: edited probe.txt." in call.args["notes"]
    # The task message's own constraints are never restated: every context holds them anyway.
    bare = [*prefix(task), Message("user", render.current_step_block(step)), *wrote]
    (call,) = provider("oracle", task).complete(tuple(bare), TOOLS, max_tokens=4096, seed=1).tool_calls
    assert "[inv:" not in call.args["notes"]


def test_a_failure_after_a_whole_file_rewrite_fetches_the_committed_copy():
    """The rewrite (from a copy older than the file) dropped a teammate's lines; the check
    names the file; the model asks git for the last committed copy and rewrites from it."""
    task = make_task("write", text_pad=0)
    committed = API_V1.replace("def fetch(url, *legacy):", "def fetch(url, *legacy, retries=0):")
    world = World({API: committed})
    sim = provider("oracle", task)
    msgs = shim_context(task)
    for _ in range(2):  # the write from the old copy, then submit
        c = sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=3)
        msgs.append(c.as_message())
        for call in c.tool_calls:
            out = (
                world.apply(call.name, call.args)
                if call.name != "submit_step"
                else render.check_result(
                    "s01", False, 1, f"FAILED tests/test_retries.py - TypeError at {API}:4"
                )
            )
            msgs.append(Message("tool", out, tool_call_id=call.id, name=call.name))
    assert "retries=0" not in world.files[API]  # clobbered
    c = sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=3)
    assert ("git", {"subcommand": "show", "args": [f"HEAD:{API}"]}) in [
        (t.name, t.args) for t in c.tool_calls
    ]
    msgs.append(c.as_message())
    for call in c.tool_calls:
        out = committed if call.name == "git" else world.apply(call.name, call.args)
        msgs.append(Message("tool", out, tool_call_id=call.id, name=call.name))
    c = sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=3)
    for call in c.tool_calls:
        world.apply(call.name, call.args)
    assert "retries=0, timeout=10" in world.files[API]
