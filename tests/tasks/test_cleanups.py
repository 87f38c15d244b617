"""Tidy-ups are judged from the code on view: what looks dead in a narrow view looks used once
the code that uses it is visible too, and a tidy-up is only invited where it was found in the
code as met (a step never "cleans up" what it is itself writing)."""

from __future__ import annotations

import pytest

from tasks import FAMILIES, generate
from tasks.common.build import apply_edit
from tasks.common.cleanups import invited, legacy_helpers
from tests.helpers.task_replay import invitations, narrow, walk

# Traps whose reason is code elsewhere in the repository: showing that code removes the temptation.
VISIBLE_REASON = ("legacy-helper:", "inline-send:", "fold-constants:")


def _chance(spec, trap):
    for step, files in walk(spec, drift=bool(trap.drift)):
        plan = spec.oracle.edits_for(step.id, files)
        if any(x.key == trap.cleanup for x in invitations(spec, step.id, files, plan)):
            return step, files, plan
    raise AssertionError(trap.id)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_tidy_up_looks_dead_only_while_its_users_are_out_of_view(family):
    for seed in range(4):
        spec = generate(family, seed)
        for trap in (t for t in spec.traps if t.cleanup.startswith(VISIBLE_REASON)):
            step, files, plan = _chance(spec, trap)
            users = {p for p, text in files.items() if p != trap.path and trap.cleanup.split(":")[-1] in text}
            users |= {"tests/test_transport.py"} if trap.cleanup.startswith("inline-send") else set()
            assert users, trap.id
            wide = {**narrow(spec, step.id, files), **{p: files[p] for p in users}}
            after = dict(wide)
            for e in plan.edits:
                apply_edit(after, e)
            paths = tuple(sorted({e.path for e in plan.edits}))
            keys = {x.key for x in invited(spec.oracle, wide, after, paths)}
            assert trap.cleanup not in keys, (spec.task_id, trap.id, sorted(users))


def test_legacy_helpers_ignores_helpers_its_module_calls():
    used = (
        "def legacy_a_rows(rows):\n    return rows\n\n\ndef export(rows):\n    return legacy_a_rows(rows)\n"
    )
    dead = "def legacy_b_rows(rows):\n    return rows\n"
    found = legacy_helpers({"p/a.py": used, "p/b.py": dead}, ("p/a.py", "p/b.py"))
    assert [x.key for x in found] == ["legacy-helper:p/b.py:legacy_b_rows"]
    assert found[0].anchors == ("legacy_b_rows",) and found[0].edits[0].path == "p/b.py"


@pytest.mark.parametrize("family", FAMILIES)
def test_the_step_that_writes_the_code_is_never_tempted_to_remove_it(family):
    """The shims, the compatibility form and the fallback appear in the step that writes them;
    found only after its edits, they are not invited there."""
    spec = generate(family, 0)
    for trap in spec.traps:
        if trap.cleanup.startswith(("reexport-shims", "legacy-form", "fallback")):
            maker = next(s for s in spec.steps if trap.path in s.touches)
            files = next(f for s, f in walk(spec) if s.id == maker.id)
            plan = spec.oracle.edits_for(maker.id, files)
            assert trap.cleanup not in {x.key for x in invitations(spec, maker.id, files, plan)}
