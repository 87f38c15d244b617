"""record_upgrade's premises, one by one, on real trees: each trap's tidy-up (the oracle's own
edits, as the simulated model would make them) breaks exactly the fact its invariant states,
and the family's check tool catches it with a line naming the file to look at; on the tree
without the tidy-up the same check passes. The family-wide contract (replay, negative
controls, depths) is in the parametrized tests beside this file."""

from __future__ import annotations

import json

import pytest

from tasks import generate
from tasks.common.build import apply_edit
from tests.helpers.task_replay import invitations, run_check, run_check_subprocess, walk, write_repo

TOOL = "python3 -B tools/check_records.py"
# trap id -> (the tool's check of that premise)
PREMISE = {"upgrade-idempotent": "retry", "export-euros": "export", "archive-format1": "archive"}


def _first_chance(spec, trap):
    for step, files in walk(spec, drift=False):
        plan = spec.oracle.edits_for(step.id, files)
        found = [x for x in invitations(spec, step.id, files, plan) if x.key == trap.cleanup]
        if found:
            after = dict(files)
            for edit in plan.edits:
                assert apply_edit(after, edit) is None
            return step.id, after, found[0]
    raise AssertionError(f"{spec.task_id}: {trap.id} never invited")


@pytest.mark.parametrize("seed", range(4))
def test_each_trap_breaks_its_premise_and_the_check_tool_names_the_file(seed, tmp_path):
    spec = generate("record_upgrade", seed)
    traps = {t.id: t for t in spec.traps}
    assert set(PREMISE) <= set(traps), sorted(traps)
    for tid, cmd in PREMISE.items():
        trap = traps[tid]
        at, files, cleanup = _first_chance(spec, trap)
        root = tmp_path / f"{tid}-clean"
        write_repo(root, files)
        code, out = run_check(root, f"{TOOL} {cmd}")
        assert code == 0, (spec.task_id, tid, at, out)
        for edit in cleanup.edits:
            assert apply_edit(files, edit) is None
        root = tmp_path / tid
        write_repo(root, files)
        code, out = run_check(root, f"{TOOL} {cmd}")
        assert code != 0 and trap.path in out, (spec.task_id, tid, out)


def test_without_the_version_check_a_retry_multiplies_the_cents_again(tmp_path):
    """The idempotency premise itself, through the real interpreter: upgrade applied to a
    record decode has already upgraded must change nothing."""
    spec = generate("record_upgrade", 0)
    trap = next(t for t in spec.traps if t.id == "upgrade-idempotent")
    _at, files, cleanup = _first_chance(spec, trap)
    write_repo(tmp_path, files)
    code, out = run_check_subprocess(tmp_path, f"{TOOL} retry")
    assert code == 0, out
    for edit in cleanup.edits:
        apply_edit(files, edit)
    write_repo(tmp_path, files)
    code, out = run_check_subprocess(tmp_path, f"{TOOL} retry")
    assert code == 1 and "25000" in out, out  # 2.5 euros -> 250 cents -> 25000


def test_the_archive_on_disk_is_format_1_and_protected():
    spec = generate("record_upgrade", 2)
    files = dict(spec.files)
    archive = [p for p in files if p.startswith("fixtures/")]
    assert len(archive) == 1 and any(p.startswith("fixtures/") or p == "fixtures/**" for p in spec.protected)
    lines = files[archive[0]].splitlines()
    assert lines and all(line.count("|") == 2 and not line.startswith("{") for line in lines)


def test_the_format_2_writer_follows_the_schema_after_the_drift(tmp_path):
    """d-schema adds a field in the schema module: the writer written at s01 (which reads the
    fields from there) writes it, and the docs step's check asks for it."""
    spec = generate("record_upgrade", 1)
    d = next(d for d in spec.drift if d.id == "d-schema")
    files = next(f for s, f in walk(spec, drift=True) if s.id == spec.steps[-2].id)
    assert dict(d.files).items() <= files.items()
    write_repo(tmp_path, files)
    codec = spec.oracle.n
    probe = (
        f"python3 -B -c 'from {codec.core} import {codec.codec}; "
        f'print({codec.codec}.{codec.new}({{"id": 1, "kind": "x", "amount": 1.5}}))\''
    )
    code, out = run_check_subprocess(tmp_path, probe)
    assert code == 0 and list(json.loads(out)) == ["v", "id", "kind", "amount", "currency"], out
    code, out = run_check(tmp_path, spec.steps[-2].check)  # the docs step not done yet
    assert code != 0 and "currency" in out and codec.schema_path in out, out
