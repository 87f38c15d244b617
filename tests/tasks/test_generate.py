"""Generation: determinism, variety across seeds, knobs, task ids, plan structure, drift
schedule, sizes and speed. Pure: no checks are run here."""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tasks
from ctxlog.statements import KEEP_CUE, covers, statements
from tasks import FAMILIES, fresh, from_id, generate
from tasks.spec import DRIFT_KINDS, TaskSpec
from tests.helpers.task_replay import invitations, walk

SEEDS = range(30)
ROOT = Path(__file__).resolve().parents[2]


def fingerprint(spec: TaskSpec) -> str:
    """Everything generated, the oracle's answers included (edits on the base tree and on
    nothing, and the tidy-ups the base tree invites)."""
    files = dict(spec.files)
    paths = tuple(sorted(p for p, _ in spec.files if p.endswith(".py")))
    answers = [(spec.oracle.edits_for(s.id, files), spec.oracle.edits_for(s.id, {})) for s in spec.steps]
    return hashlib.sha256(repr((spec, answers, spec.oracle.cleanups(files, paths))).encode()).hexdigest()


def protected(spec: TaskSpec, path: str) -> bool:
    return any(fnmatch.fnmatch(path, g) for g in spec.protected)


@pytest.mark.parametrize("family", FAMILIES)
def test_same_seed_same_task(family):
    for seed in SEEDS:
        a, b = fresh(family, seed), fresh(family, seed)  # two generations, not one kept task
        assert a == b and a.files == b.files
        if seed < 8:  # the oracle too (slower: it walks every step)
            assert fingerprint(a) == fingerprint(b)


def test_deterministic_across_processes():
    """No dependence on hash randomisation (set order) or on anything outside the seed."""
    code = (
        "import sys; sys.path.insert(0, 'tests/tasks'); from tests.tasks.test_generate import fingerprint;"
        "from tasks import fresh, FAMILIES;"
        "print([fingerprint(fresh(f, s)) for f in FAMILIES for s in range(4)])"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": h, "PYTHONPATH": str(ROOT)},
        ).stdout
        for h in ("1", "2")
    }
    assert len(outs) == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_seeds_differ_in_names_sizes_and_call_graphs(family):
    specs = [generate(family, seed) for seed in range(20)]
    layouts = {tuple(p for p, _ in s.files) for s in specs}
    sizes = {tuple(len(c) for _, c in s.files) for s in specs}  # per file: two totals may meet by chance
    graphs = set()
    for s in specs:
        edges = []
        for path, text in s.files:
            if path.endswith(".py") and not path.startswith(("tests/", "tools/")):
                edges += [
                    (path, node.module)
                    for node in ast.walk(ast.parse(text))
                    if isinstance(node, ast.ImportFrom)
                ]
        graphs.add(tuple(sorted(edges)))
    assert len(layouts) == len(sizes) == len(graphs) == 20
    assert len({s.title for s in specs}) > 5  # the API / key names themselves vary


def test_every_generation_is_afresh_and_the_same():
    """No task is kept on the reference path (bench/accel/kept_tasks.py keeps them with task.kept)."""
    a = generate("config_rename", 5, steps=8)
    b = from_id(a.task_id)
    assert a is not b and a.oracle is not b.oracle and a == b and a.files == b.files


@pytest.mark.parametrize("family", FAMILIES)
def test_task_id_round_trips(family):
    spec = generate(family, 3)
    assert spec.task_id == f"{family}/3" and from_id(spec.task_id) == spec
    sized = generate(family, 5, steps=8, callers=9, filler=1)
    assert sized.task_id == tasks.task_id(family, 5, steps=8, callers=9, filler=1)
    assert from_id(sized.task_id) == sized and len(sized.steps) == 8
    assert generate(family, 5, steps=12).task_id == f"{family}/5"  # a default knob is not part of the id


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    "size, message",
    [
        (
            {"steps": 40},
            "task.size.steps: Input should be less than or equal to 16, got 40; fix it in conf/task/",
        ),
        ({"steps": 5}, "task.size.steps: Input should be greater than or equal to 6, got 5"),
        ({"filler": -1}, "task.size.filler: Input should be greater than or equal to 0, got -1"),
        ({"filler": 11}, "task.size.filler: Input should be less than or equal to 10, got 11"),
        ({"callers": 0}, "task.size.callers: Input should be greater than or equal to 1, got 0"),
        ({"callers": 65}, "task.size.callers: Input should be less than or equal to 64, got 65"),
        ({"steps": "12"}, "task.size.steps: Input should be a valid integer, got '12'"),
        ({"steps": True}, "task.size.steps: Input should be a valid integer, got True"),
        ({"filler": 2.5}, "task.size.filler: Input should be a valid integer, got 2.5"),
        ({"callers": 3, "steps": 16}, "task.size.callers: must be >= "),
        ({"colour": 1}, "task.size.colour: unknown key 'colour'"),
    ],
)
def test_bad_knobs_are_clear_errors(family, size, message):
    with pytest.raises(ValueError) as err:
        generate(family, 0, **size)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("size", [{}, {"steps": 6}, {"steps": 16, "callers": 40, "filler": 0}])
def test_plan_structure(family, size):
    for seed in range(10):
        spec = generate(family, seed, **size)
        steps = [s.id for s in spec.steps]
        assert steps == [f"s{i:02d}" for i in range(1, size.get("steps", 12) + 1)]
        assert {"tests/**", "tools/**"} <= set(spec.protected)
        assert spec.test_command in spec.final_check
        ids = [i.id for i in spec.all_invariants()]
        assert len(ids) == len(set(ids))
        assert any(i.stated == s.id for s in spec.steps for i in s.establishes)  # a mid-plan invariant
        for step in spec.steps:
            assert step.title and step.instructions and step.touches
            assert all(part.startswith("python3 -B ") for part in step.check.split(" && ")), step.check
            for path in step.touches:
                assert not any(ch in path for ch in "*?[") and not protected(spec, path)
        for inv in spec.all_invariants():  # each states itself: a keep cue and all its anchors
            assert inv.anchors and KEEP_CUE.search(inv.text) and covers(inv.text, inv.anchors), inv


@pytest.mark.parametrize("family", FAMILIES)
def test_three_traps_at_three_depths_each_stated_by_its_invariant(family):
    """Every trap's tidy-up is invited (in the narrow view of a step) before the check that
    catches it, the first chances of the base tree's traps lie at three different steps, and
    the invariant protecting a trap covers the tidy-up's anchors (a drift's trap is protected
    only by its commit message)."""
    for seed in range(6):
        spec = generate(family, seed)
        steps = [s.id for s in spec.steps]
        invs = {i.id: i for i in spec.all_invariants()}
        first = {}
        for trap in spec.traps:
            chances = []
            for step, files in walk(spec, drift=bool(trap.drift)):
                plan = spec.oracle.edits_for(step.id, files)
                found = [x for x in invitations(spec, step.id, files, plan) if x.key == trap.cleanup]
                if found:
                    chances.append(step.id)
                    anchors = found[0].anchors
            assert chances and chances[0] < trap.caught_by, (spec.task_id, trap.id, chances)
            first[trap.id] = chances[0]
            if trap.protected_by:
                assert set(anchors) <= set(invs[trap.protected_by].anchors), (trap.id, anchors)
            else:
                message = next(d.message for d in spec.drift if d.id == trap.drift)
                assert KEEP_CUE.search(message) and covers(message, anchors), message
            assert trap.caught_by in steps
        base = [first[t.id] for t in spec.traps if not t.drift]
        assert len(base) >= 3 and len(set(base)) >= 3, (spec.task_id, first)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_trap_stated_mid_plan_is_stated_by_the_instructions_of_the_step_that_establishes_it(family):
    """What a step establishes reaches a strategy that carries only the model's own hand-off
    (invariants_from=model: the keep-sentences of the step's instructions) only if the
    instructions state it: otherwise that strategy loses a trap's protection by construction."""
    for seed in range(6):
        spec = generate(family, seed)
        invs = {i.id: i for i in spec.all_invariants()}
        for trap in spec.traps:
            inv = invs.get(trap.protected_by)
            if inv is None or inv.stated == "plan":
                continue
            said = [s for _, s in statements(spec.step(inv.stated).instructions)]
            assert any(covers(s, inv.anchors) for s in said), (spec.task_id, trap.id, inv.anchors)


@pytest.mark.parametrize("family", FAMILIES)
def test_missing_files_are_read_first(family):
    spec = generate(family, 1)
    for step, files in walk(spec, drift=True):
        plan = spec.oracle.edits_for(step.id, {})
        assert plan.reads and not plan.edits, step.id
        assert all(p in files for p in plan.reads)  # files that exist by then
        some = {p: files[p] for p in plan.reads[1:]}  # one still unseen: it is asked for, alone
        assert spec.oracle.edits_for(step.id, some).reads == plan.reads[:1]


def test_drift_kinds_cover_every_kind():
    kinds = {d.kind for f in FAMILIES for d in generate(f, 0).drift}
    assert kinds == set(DRIFT_KINDS)
    for family in FAMILIES:  # every family has a value that goes stale and a new trap
        assert {"changed_value", "new_trap"} <= {d.kind for d in generate(family, 0).drift}


@pytest.mark.parametrize("family", FAMILIES)
def test_drift_schedule(family):
    for seed in SEEDS:
        spec = generate(family, seed)
        order = [s.id for s in spec.steps]
        needs = {s.id: spec.oracle.edits_for(s.id, {}).reads for s in spec.steps}
        for d in spec.drift:
            assert d.before_step in order[1:] and d.message and "<" in d.author and d.kind in DRIFT_KINDS
            at = order.index(d.before_step)
            for path, _content in d.files:
                # never lands on a file the agent has edited (or created) before it
                assert all(path not in s.touches for s in spec.steps[:at]), (d.id, path)
            if d.kind in ("changed_value", "rename_helper"):
                # a file an EARLIER step read and a LATER step edits: the agent's copy goes stale
                assert any(path in needs[s] for path, _ in d.files for s in order[:at]), d.id
                assert any(path in s.touches for path, _ in d.files for s in spec.steps[at:]), d.id


@pytest.mark.parametrize("family", FAMILIES)
def test_default_task_size_forces_compaction_only_in_the_tight_arm(family):
    """~20-40k tokens of file content read and written over the plan (an accumulating
    transcript must compact under the 12k window's ~7.9k budget, never under 200k), while the
    largest step's files fit in ~3k."""
    pytest.importorskip("tiktoken")
    from tasks.show import workload

    for seed in range(5):
        total, largest, _ = workload(generate(family, seed))
        assert 20_000 <= total <= 40_000 and largest <= 3_000, (seed, total, largest)


@pytest.mark.parametrize("family", FAMILIES)
def test_repositories_shadow_nothing(family):
    """No top-level name of a generated repository hides a stdlib module (or the harness's own
    packages) from the checks that run inside it."""
    taken = set(sys.stdlib_module_names) | {"bench", "tasks", "strategies", "analysis", "tests", "pytest"}
    for seed in range(30):
        tops = {p.split("/")[0].removesuffix(".py") for p, _ in generate(family, seed).files}
        assert not (tops - {"tests"}) & taken, tops & taken


@pytest.mark.parametrize("family", FAMILIES)
def test_each_size_knob_has_a_one_line_doc_and_its_bounds_are_accepted(family):
    """The family's Size (tasks/common/size.py) is the one statement of its knobs: the edges of
    every bound generate, one past them is refused above."""
    schema = tasks.size_schema(family)
    assert schema is not None and set(schema.model_fields) == {"steps", "callers", "filler"}
    for key, field in schema.model_fields.items():
        assert field.description and "\n" not in field.description, key
    smallest = generate(family, 1, steps=6, callers=6 - schema.OVERHEAD, filler=0)
    largest = generate(family, 1, steps=16, callers=64, filler=10)
    assert (len(smallest.steps), len(largest.steps)) == (6, 16)
    assert generate(family, 1, steps=12.0).task_id == f"{family}/1"  # a whole float is that int


@pytest.mark.parametrize("family", FAMILIES)
def test_null_callers_is_drawn_by_seed_and_a_given_count_draws_the_same(family):
    """callers left out (or null in the config) is 2 per batch plus a seeded draw from SPARE; the
    draw is made even when callers is given, so the rest of the task keeps its rng order."""
    from tasks.common import skeleton

    schema = tasks.size_schema(family)
    assert schema is not None
    batches = 12 - schema.OVERHEAD
    drawn = {skeleton.frame(family, seed, {}, schema).callers for seed in range(40)}
    assert drawn == set(range(2 * batches + schema.SPARE[0], 2 * batches + schema.SPARE[1] + 1))
    given = skeleton.frame(family, 7, {"callers": 30}, schema)
    assert given.callers == 30 and given.rng.random() == skeleton.frame(family, 7, {}, schema).rng.random()
