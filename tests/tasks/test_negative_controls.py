"""Negative controls: the checks catch what the plan says they catch.

1. The trap removed early (the tempting clean-up at the tidy step) passes that step's check
   and fails the check the plan names in `Trap.caught_by`.
2. A drift-added caller the engineer never saw stays unmigrated and fails the final step,
   whose output names the file (so a re-read can fix it).
3. Edits computed from a stale copy of a drifted file never pass silently: a search/replace
   misses, or the step's check fails; a whole-file write from the stale copy fails the check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks import FAMILIES, generate
from tasks.common.build import apply_edit
from tests.helpers.task_replay import apply_drift, replay, run_check, run_check_subprocess, walk, write_repo

SEEDS = range(5)


def _tidy(spec) -> str:
    return next(step.id for step, files in walk(spec) if spec.oracle.edits_for(step.id, files, frozenset()).temptations)


@pytest.mark.parametrize("family", FAMILIES)
def test_trap_removed_early_is_caught_where_the_plan_says(family, tmp_path):
    for seed in SEEDS:
        spec = generate(family, seed)
        trap, tidy = spec.traps[0], _tidy(spec)
        verdicts = {}
        for step, plan, errors, code, out, _files in replay(spec, tmp_path / str(seed), False, tempt_at=tidy,
                                                            stop_at=trap.caught_by):
            assert not errors
            verdicts[step.id] = (code, out)
            if step.id == tidy:
                assert plan.temptations and plan.temptations[0].trap_id == trap.id
        assert verdicts[tidy][0] == 0, "the clean-up looks safe: the tidy step still passes"
        assert all(code == 0 for sid, (code, _) in verdicts.items() if sid < trap.caught_by)
        code, out = verdicts[trap.caught_by]
        assert code != 0, f"{spec.task_id}: removing {trap.id} early must fail {trap.caught_by}"
        assert trap.path in out or "Error" in out, out[-1500:]


def test_trap_caught_by_the_real_pytest_too(tmp_path):
    for family in FAMILIES:
        spec = generate(family, 0)
        trap = spec.traps[0]
        *_, (step, _plan, _errors, code, _out, _files) = replay(spec, tmp_path / family, False,
                                                                tempt_at=_tidy(spec), stop_at=trap.caught_by)
        assert step.id == trap.caught_by
        real, out = run_check_subprocess(tmp_path / family, step.check)
        assert code != 0 and real != 0, out


def _unseen_callers(spec) -> set[str]:
    """Code files a drift adds or a changed tool starts to cover, which no step touches."""
    touched = {p for s in spec.steps for p in s.touches}
    paths = {p for d in spec.drift if d.kind in ("new_caller",) for p, _ in d.files if not p.startswith("tests/")}
    if any(d.kind == "tool_change" for d in spec.drift):
        paths |= {p for p, _ in spec.files if p.startswith("ops/") and not p.endswith("__init__.py")}
    return paths - touched


@pytest.mark.parametrize("family", FAMILIES)
def test_unmigrated_drift_caller_fails_the_final_check(family, tmp_path):
    for seed in SEEDS:
        spec = generate(family, seed)
        hidden = frozenset(_unseen_callers(spec))
        assert hidden, spec.task_id
        results = {getattr(s, "id", s): (code, out) for s, _p, _e, code, out, _f in
                   replay(spec, tmp_path / str(seed), True, hide=hidden)}
        last = spec.steps[-1].id
        code, out = results[last]
        assert code != 0 and results["final"][0] != 0, spec.task_id
        assert all(path in out for path in hidden), out[-2000:]  # named, so a re-read can fix it
        # ... and with the same drift but nothing hidden, the replay passes (test_replay), and
        # without drift the hidden files never mattered:
        clean = {getattr(s, "id", s): code for s, _p, _e, code, _o, _f in
                 replay(spec, tmp_path / f"{seed}-nodrift", False, hide=hidden)}
        assert clean["final"] == 0


@pytest.mark.parametrize("family", FAMILIES)
def test_edit_against_a_stale_file_does_not_pass_silently(family, tmp_path):
    for seed in SEEDS:
        spec = generate(family, seed)
        stale_drifts = [d for d in spec.drift if d.kind in ("stale_edit", "rename_helper")]
        assert stale_drifts
        for d in stale_drifts:
            order = [s.id for s in spec.steps]
            before = dict(spec.files)
            for step, files in walk(spec, drift=True):  # the true tree at the head of each step
                if order.index(step.id) < order.index(d.before_step):
                    before = dict(files)
                    continue
                stale = {p: before[p] for p, _ in d.files if p in before and p in step.touches}
                if stale:
                    break
            else:
                pytest.fail(f"{spec.task_id}: no step edits {d.id}'s files after it lands")
            recalled = frozenset(i.id for i in spec.all_invariants())
            perceived = {**files, **stale}  # the engineer's copy predates the drift
            plan = spec.oracle.edits_for(step.id, perceived, recalled)
            assert not plan.reads
            # (a) search/replace from the stale copy
            real = dict(files)
            errors = [e for e in (apply_edit(real, edit) for edit in plan.edits) if e]
            root = tmp_path / f"{seed}-{d.id}"
            write_repo(root, real)
            code, out = run_check(root, step.check)
            assert errors or code != 0, (spec.task_id, d.id, step.id)
            # (b) the same edits made as whole-file writes of the stale copy: clobbers the drift
            clobbered = dict(files)
            for path in stale:
                mine = {path: stale[path]}
                for edit in plan.edits:
                    if edit.path == path:
                        assert apply_edit(mine, edit) is None
                clobbered[path] = mine[path]
            for edit in plan.edits:
                if edit.path not in stale:
                    apply_edit(clobbered, edit)
            write_repo(root, clobbered)
            code, out = run_check(root, step.check)
            assert code != 0, (spec.task_id, d.id, step.id, "clobbering the drift must not pass")


@pytest.mark.parametrize("family", FAMILIES)
def test_drift_only_when_applied(family, tmp_path):
    """Sanity for the controls above: the drift files really differ from the base tree."""
    spec = generate(family, 0)
    files = dict(spec.files)
    for d in spec.drift:
        after = dict(files)
        apply_drift(after, d)
        assert after != files, d.id
    write_repo(Path(tmp_path), files)
