"""Negative controls: the checks catch what the plan says they catch.

1. Every trap's tidy-up, done at the first step that invites it, passes that step and every
   step before the one the plan names in `Trap.caught_by`, whose check fails.
2. A drift-added caller the engineer never saw stays unmigrated and fails the final step,
   whose output names the file (so a re-read can fix it).
3. Edits computed from a stale copy of a drifted file never pass silently: a search/replace
   misses, or the step's check fails; a whole-file write from the stale copy fails the check.
4. A drifted value a later step must carry: written from the stale copy, that step's check
   fails and names the file that holds the current value.
5. The harmless tidy-up every family invites (`TaskSpec.harmless`) is really harmless: done at
   its first chance, with and without drift, every check and the final acceptance still pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks import FAMILIES, generate
from tasks.common.build import apply_edit
from tests.helpers.task_replay import (
    apply_drift,
    invitations,
    replay,
    run_check,
    run_check_subprocess,
    walk,
    write_repo,
)

SEEDS = range(5)


def _first_chance(spec, trap) -> str:
    for step, files in walk(spec, drift=bool(trap.drift)):
        plan = spec.oracle.edits_for(step.id, files)
        if any(x.key == trap.cleanup for x in invitations(spec, step.id, files, plan)):
            return step.id
    raise AssertionError(f"{spec.task_id}: {trap.id} is never invited")


@pytest.mark.parametrize("family", FAMILIES)
def test_every_trap_passes_where_done_and_fails_where_caught(family, tmp_path):
    for seed in SEEDS:
        spec = generate(family, seed)
        for trap in spec.traps:
            at = _first_chance(spec, trap)
            verdicts = {}
            for step, _plan, done, errors, code, out, _files in replay(
                spec,
                tmp_path / f"{seed}-{trap.id}",
                bool(trap.drift),
                tempt_at=at,
                tempt=trap.cleanup,
                stop_at=trap.caught_by,
            ):
                assert not errors
                verdicts[step.id] = (code, out)
                if step.id == at:
                    assert [x.key for x in done] == [trap.cleanup]
            label = (spec.task_id, trap.id, at)
            assert all(code == 0 for sid, (code, _) in verdicts.items() if sid != trap.caught_by), label
            code, out = verdicts[trap.caught_by]
            assert code != 0, label


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_invites_a_harmless_tidy_up_that_breaks_nothing(family, tmp_path):
    for seed, drift in ((0, True), (1, False)):  # two whole replays per family: the suite's time
        spec = generate(family, seed)
        assert spec.harmless, spec.task_id  # caution has a price in every family
        at = next(
            (
                step.id
                for step, files in walk(spec, drift)
                for x in invitations(spec, step.id, files, spec.oracle.edits_for(step.id, files))
                if x.key.startswith(spec.harmless)
            ),
            None,
        )
        assert at, (spec.task_id, drift, "no harmless tidy-up is ever invited")
        runs = list(replay(spec, tmp_path / f"{seed}-{drift}", drift, tempt_at=at, tempt=spec.harmless[0]))
        done = next(d for s, _p, d, *_ in runs if getattr(s, "id", s) == at)
        assert done and all(x.key.startswith(spec.harmless) for x in done), (spec.task_id, at)
        assert all(code == 0 and not errors for _s, _p, _d, errors, code, _o, _f in runs), (spec.task_id, at)


def test_trap_caught_by_the_real_pytest_too(tmp_path):
    for family in FAMILIES:
        spec = generate(family, 0)
        for trap in (t for t in spec.traps if not t.drift):
            *_, (step, _plan, _done, _errors, code, _out, _files) = replay(
                spec,
                tmp_path / family,
                False,
                tempt_at=_first_chance(spec, trap),
                tempt=trap.cleanup,
                stop_at=trap.caught_by,
            )
            assert step.id == trap.caught_by
            real, out = run_check_subprocess(tmp_path / family, step.check)
            assert code != 0 and real != 0, out


def _unseen_callers(spec) -> set[str]:
    """Code files a drift adds or a changed tool starts to cover, which no step touches."""
    touched = {p for s in spec.steps for p in s.touches}
    paths = {
        p for d in spec.drift if d.kind in ("new_caller",) for p, _ in d.files if not p.startswith("tests/")
    }
    if any(d.kind == "tool_change" for d in spec.drift):
        paths |= {p for p, _ in spec.files if p.startswith("ops/") and not p.endswith("__init__.py")}
    return paths - touched


@pytest.mark.parametrize("family", FAMILIES)
def test_unmigrated_drift_caller_fails_the_final_check(family, tmp_path):
    for seed in SEEDS:
        spec = generate(family, seed)
        hidden = frozenset(_unseen_callers(spec))
        assert hidden, spec.task_id
        results = {
            getattr(s, "id", s): (code, out)
            for s, _p, _d, _e, code, out, _f in replay(spec, tmp_path / str(seed), True, hide=hidden)
        }
        last = spec.steps[-1].id
        code, out = results[last]
        assert code != 0 and results["final"][0] != 0, spec.task_id
        assert all(path in out for path in hidden), out[-2000:]  # named, so a re-read can fix it
        # ... and with the same drift but nothing hidden, the replay passes (test_replay), and
        # without drift the hidden files never mattered:
        clean = {
            getattr(s, "id", s): code
            for s, _p, _d, _e, code, _o, _f in replay(spec, tmp_path / f"{seed}-nodrift", False, hide=hidden)
        }
        assert clean["final"] == 0


@pytest.mark.parametrize("family", FAMILIES)
def test_edit_against_a_stale_file_does_not_pass_silently(family, tmp_path):
    for seed in SEEDS:
        spec = generate(family, seed)
        stale_drifts = [d for d in spec.drift if d.kind in ("changed_value", "rename_helper")]
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
            perceived = {**files, **stale}  # the engineer's copy predates the drift
            plan = spec.oracle.edits_for(step.id, perceived)
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


@pytest.mark.parametrize("family", ["signature_migration", "config_rename", "record_upgrade"])
def test_a_drifted_value_carried_from_a_stale_copy_fails_and_names_its_source(family, tmp_path):
    """The docs step lists values another file holds: from the copy read before the drift it
    writes the old ones; its check fails and names the file to re-read."""
    for seed in SEEDS:
        spec = generate(family, seed)
        d = next(d for d in spec.drift if d.kind == "changed_value")
        docs = spec.steps[-2]
        if d.before_step > docs.id:
            continue  # lands after the docs step: nothing to carry there
        before = dict(spec.files)
        source = next(p for p, _ in d.files if p in spec.oracle.edits_for(docs.id, {}).reads)
        files = next(now for step, now in walk(spec, drift=True) if step.id == docs.id)
        perceived = {**files, source: before[source]}
        real = dict(files)
        for edit in spec.oracle.edits_for(docs.id, perceived).edits:
            apply_edit(real, edit)
        write_repo(tmp_path / str(seed), real)
        code, out = run_check(tmp_path / str(seed), docs.check)
        assert code != 0 and source in out, (spec.task_id, out[-1500:])
        fresh = dict(files)  # and from the current copy it passes
        for edit in spec.oracle.edits_for(docs.id, files).edits:
            apply_edit(fresh, edit)
        write_repo(tmp_path / str(seed), fresh)
        assert run_check(tmp_path / str(seed), docs.check)[0] == 0


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
