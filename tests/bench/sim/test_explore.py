"""The sim reaches durable facts through the published tools (git status/log, read_file), each
with its rate; a commit message it looked at protects like any statement; it can get an edit
wrong for reasons unrelated to the context; and common random numbers are a switch."""

from __future__ import annotations

from bench.core import render
from bench.core.toolspecs import TOOLS
from bench.core.types import Message, ToolCall
from tests.helpers.sim_probes import removes_shim, shim_context
from tests.helpers.sim_world import API, API_V1, make_task, prefix, provider, read_turn

SEEDS = range(3000, 3400)
LOOK = {"exploration": True}
KEEP_MSG = (
    "commit "
    + "c" * 40
    + "\nAuthor: Ann Other <ann@example.org>\n\n    api: keep _compat_fetch, plugins call it by name\n\n pkg/api.py | 3 +++\n"
)


def step_start(task, *before: Message) -> list[Message]:
    return [*prefix(task), *before, Message("user", render.current_step_block(task.steps[0]))]


def first(sim, msgs, seed=7):
    return sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=seed)


def git_turn(args: list[str], output: str, call_id: str) -> list[Message]:
    return [
        Message("assistant", "", (ToolCall(call_id, "git", {"subcommand": "log", "args": args}),)),
        Message("tool", output, tool_call_id=call_id, name="git"),
    ]


def test_it_looks_at_status_and_history_at_a_steps_first_turn_with_its_rate():
    task = make_task(text_pad=0)
    always = first(
        provider(task=task, mechanisms=LOOK, p_look_history=1.0, history_depth=4), step_start(task)
    )
    assert [(c.name, c.args) for c in always.tool_calls] == [
        ("git", {"subcommand": "status", "args": ["--short"]}),
        ("git", {"subcommand": "log", "args": ["--stat", "-n", "4"]}),
    ]
    sim = provider(task=task, mechanisms=LOOK, p_look_history=0.3)
    looked = sum(any(c.name == "git" for c in first(sim, step_start(task), s).tool_calls) for s in SEEDS)
    assert abs(looked / len(SEEDS) - 0.3) < 0.07
    # switched off (the probes' default, and model.mechanisms.exploration=false): never
    off = provider(task=task, mechanisms={"exploration": False}, p_look_history=1.0)
    assert not any(c.name == "git" for c in first(off, step_start(task)).tool_calls)


def test_it_looks_only_at_a_steps_first_turn():
    task = make_task(text_pad=0)
    sim = provider(task=task, mechanisms=LOOK, p_look_history=1.0, p_check_changes=1.0)
    msgs = step_start(task) + git_turn(["--stat", "-n", "5"], "(no output)", "g1")
    assert [c.name for c in first(sim, msgs).tool_calls] == ["read_file"]


def test_it_checks_what_changed_since_the_head_it_last_saw():
    task = make_task(text_pad=0)
    sim = provider(task=task, mechanisms=LOOK, p_look_history=0.0, p_check_changes=1.0)
    earlier = git_turn(["--stat", "-n", "5"], "commit " + "a" * 40 + "\nAuthor: x\n\n    init\n", "g0")
    calls = first(sim, step_start(task, *earlier)).tool_calls
    assert [(c.name, c.args) for c in calls] == [
        ("git", {"subcommand": "log", "args": ["--stat", "a" * 40 + "..HEAD"]})
    ]
    # never having looked, it has no HEAD to compare with
    assert not any(c.name == "git" for c in first(sim, step_start(task)).tool_calls)


def test_a_commit_message_it_looked_at_protects_like_any_statement():
    """The fact only a commit message states is reachable by a raw transcript: through git log."""
    task = make_task(text_pad=0)
    sim = provider(task=task)
    bare = shim_context(task)
    looked = shim_context(task, *git_turn(["--stat", "-n", "5"], KEEP_MSG, "g1"))
    unprotected = sum(removes_shim(first(sim, bare, s)) for s in SEEDS) / len(SEEDS)
    protected = sum(removes_shim(first(sim, looked, s)) for s in SEEDS) / len(SEEDS)
    assert unprotected > 0.4 and protected < 0.05


def test_a_git_log_naming_a_file_held_from_before_sends_it_to_read_the_file_again():
    task = make_task(text_pad=0)
    sim = provider(task=task)
    held = read_turn(API, API_V1, "r0")
    msgs = [
        *prefix(task),
        *held,
        Message("user", render.current_step_block(task.steps[0])),
        *git_turn(["--stat", "-n", "5"], KEEP_MSG, "g1"),
    ]
    assert [(c.name, c.args.get("path")) for c in first(sim, msgs).tool_calls] == [("read_file", API)]


def test_it_rereads_a_file_seen_before_the_step_before_editing_it_with_its_rate():
    task = make_task(text_pad=0)
    msgs = [
        *prefix(task),
        *read_turn(API, API_V1, "r0"),
        Message("user", render.current_step_block(task.steps[0])),
    ]
    sim = provider(task=task, mechanisms=LOOK, p_look_history=0.0, p_reread_before_edit=0.5)
    names = [[c.name for c in first(sim, msgs, s).tool_calls] for s in SEEDS]
    share = sum(n == ["read_file"] for n in names) / len(SEEDS)
    assert abs(share - 0.5) < 0.07 and all(
        n in (["read_file"], ["edit_file"]) or "edit_file" in n for n in names
    )
    # a copy read in this step is not re-read
    fresh = [
        *prefix(task),
        Message("user", render.current_step_block(task.steps[0])),
        *read_turn(API, API_V1, "r1"),
    ]
    always = provider(task=task, mechanisms=LOOK, p_look_history=0.0, p_reread_before_edit=1.0)
    assert "read_file" not in [c.name for c in first(always, fresh).tool_calls]


def test_competence_errors_leave_an_edit_out_at_their_rate_and_are_reported():
    task = make_task(text_pad=0)
    msgs = shim_context(task)
    sim = provider(task=task, mechanisms={"competence": True, "temptation": False}, p_edit_error=0.2)
    replies = [first(sim, msgs, s) for s in SEEDS]
    slipped = [c for c in replies if c.extra["slips"]]
    assert abs(len(slipped) / len(SEEDS) - 0.2) < 0.06
    assert all(not any(t.name == "edit_file" for t in c.tool_calls) for c in slipped)
    assert slipped[0].extra["slips"] == [{"step": "s01", "attempt": 0, "left_out": API}]
    off = provider(task=task, mechanisms={"competence": False, "temptation": False}, p_edit_error=1.0)
    assert all(not first(off, msgs, s).extra["slips"] for s in SEEDS[:50])


def test_common_random_numbers_are_a_switch():
    task = make_task(text_pad=0)
    msgs = shim_context(task)

    def removals(**kw) -> list[bool]:
        from bench.sim.provider import SimProvider

        base = provider(task=task)
        sim = SimProvider(
            {**vars(base.params)},
            model_id="sim",
            price=vars(base.price),
            window=base.window,
            task_loader=lambda tid: task,
            **kw,
        )
        return [removes_shim(first(sim, msgs, s)) for s in SEEDS]

    shared_a, shared_b = removals(stream="raw/drift/none"), removals(stream="ledger/drift/none")
    assert shared_a == shared_b  # shared: the cell's name is not read
    ind_a = removals(draws="independent", stream="raw/drift/none")
    ind_b = removals(draws="independent", stream="ledger/drift/none")
    assert ind_a == removals(draws="independent", stream="raw/drift/none")  # still deterministic
    disagree = sum(a != b for a, b in zip(ind_a, ind_b, strict=True)) / len(SEEDS)
    assert abs(disagree - 0.5) < 0.08  # two independent p=0.5 draws disagree half the time


def test_two_tasks_on_one_seed_do_not_share_the_looks_or_the_slips():
    """Draws are keyed by content (the step's header, the files of the batch), not by the seed
    and step id alone: families share seeds, and must not share their luck through them."""
    from bench.sim.competence import slip
    from bench.sim.explore import orient
    from bench.sim.params import SimParams
    from bench.sim.perception import perceive
    from tasks.spec import Edit
    from tests.helpers.sim_world import params

    p = SimParams.from_mapping(params("sim", p_look_history=0.5, p_edit_error=0.5))
    task = make_task(text_pad=0)
    other = Message(
        "user", render.current_step_block(task.steps[0]).replace("Give fetch a timeout", "Rename a key")
    )
    a = [bool(orient(perceive(step_start(task)), p, s, "s01")) for s in SEEDS]
    b = [bool(orient(perceive([*prefix(task), other]), p, s, "s01")) for s in SEEDS]
    assert 0.35 < sum(x != y for x, y in zip(a, b, strict=True)) / len(SEEDS) < 0.65
    x = [slip([Edit("a.py", "write", content="")], p, s, "s01", 0)[1] is None for s in SEEDS]
    y = [slip([Edit("b.py", "write", content="")], p, s, "s01", 0)[1] is None for s in SEEDS]
    assert 0.35 < sum(i != j for i, j in zip(x, y, strict=True)) / len(SEEDS) < 0.65
