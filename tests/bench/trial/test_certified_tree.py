"""What was certified is what is recorded (bench/trial/certified_tree.py, issue 42 item 2):
code under test that rewrites the working copy while the judge checks its copy, and a tool call
after a passing `submit_step`, each end the trial as `uncertified_tree` with a policy violation;
with the guard removed each attack records a tree nobody certified."""

from __future__ import annotations

import os

import pytest

from bench.core.outcomes import AgentFailure
from bench.eventlog.writer import EventLog
from bench.sandbox.judge import tree_entries
from bench.sandbox.workcopy import WorkingCopy
from bench.trial import certified_tree
from bench.trial.certify import HarnessCopy, certify
from tests.bench.trial.conftest import CALC, CHECK, FINAL, SOLVE, events, kinds, tiny_task

WRONG = "def add(a, b):\n    return a - b\n"


def _rewrites_on_import(workdir: str, only_under: str = "") -> str:
    """calc.py that is right, and on import (in the check's process, not in the working copy)
    puts a wrong calc.py into the working copy and deletes README.md."""
    return (
        CALC + "import os, sys\n"
        f"if os.getcwd() != {workdir!r} and {only_under!r} in ''.join(sys.modules):\n"
        f"    open(os.path.join({workdir!r}, 'calc.py'), 'w').write({WRONG!r})\n"
        f"    os.path.exists(os.path.join({workdir!r}, 'README.md')) and os.remove(os.path.join({workdir!r}, 'README.md'))\n"
    )


@pytest.fixture
def log(tmp_path):
    return EventLog(tmp_path / "events.jsonl")


def test_the_certified_tree_is_the_working_copys_git_tree(box):
    box.write_file("calc.py", CALC)
    box.write_file("pkg/deep/mod.py", "x = 1\n")
    box.write_file("run.sh", "#!/bin/sh\necho hi\n")
    os.chmod(box.workdir / "run.sh", 0o755)
    os.symlink("calc.py", box.workdir / "link.py")
    copy = HarnessCopy(tiny_task())
    entries = tree_entries(box.workdir, box.list_files(), copy.files, copy.protected)
    assert {"pkg/deep/mod.py", "run.sh", "link.py"} <= set(entries)
    assert certified_tree.tree_of(entries) == box.tree_sha()
    assert certified_tree.tree_of({}) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree


def test_code_that_rewrites_the_working_copy_during_a_check_fails_the_trial(box, log):
    box.write_file("calc.py", _rewrites_on_import(str(box.workdir)))
    before = box.tree_sha()
    with pytest.raises(AgentFailure) as info:
        certify(box, HarnessCopy(tiny_task()), log, 0, "final", FINAL)
    assert info.value.reason == "uncertified_tree"
    check = [r for r in log.records if r["kind"] == "check"][-1]
    assert check["passed"] and check["tree"] == before != box.tree_sha()  # the judge's copy passed
    assert any(
        "not the tree the judge certified" in r["detail"]
        for r in log.records
        if r["kind"] == "policy_violation"
    )


def test_without_the_comparison_a_tree_nobody_certified_is_recorded(box, log, monkeypatch):
    monkeypatch.setattr(certified_tree, "after_check", lambda *a: None)
    box.write_file("calc.py", _rewrites_on_import(str(box.workdir)))
    out = certify(box, HarnessCopy(tiny_task()), log, 0, "final", FINAL)
    assert out.passed and box.read_file("calc.py") == WRONG and not os.path.exists(box.workdir / "README.md")


def test_a_step_commit_refuses_any_tree_but_the_certified_one(box, log):
    box.write_file("calc.py", CALC)
    assert certify(box, HarnessCopy(tiny_task()), log, 0, "s01", CHECK).passed
    head = box.git("rev-parse", "HEAD")
    box.write_file("calc.py", WRONG)  # what a tool call after submit_step in the same reply does
    with pytest.raises(AgentFailure) as info:
        box.commit("s01: add", "a <a@b.c>")
    assert info.value.reason == "uncertified_tree" and box.git("rev-parse", "HEAD") == head
    box.write_file("calc.py", CALC)  # the hold was spent: the next commit (a drift's) is free
    box.write_file("calc.py", WRONG)
    box.commit("drift", "o <o@b.c>")


def test_a_step_commit_of_the_certified_tree_is_logged(box, log):
    box.write_file("calc.py", CALC)
    assert certify(box, HarnessCopy(tiny_task()), log, 0, "s01", CHECK).passed
    sha = box.commit("s01: add", "a <a@b.c>")
    (commit,) = [r for r in log.records if r["kind"] == "commit"]
    check = [r for r in log.records if r["kind"] == "check"][-1]
    assert commit["commit"] == sha and commit["tree"] == commit["certified"] == check["tree"]


WRITE_AFTER_SUBMIT = [
    SOLVE[0],
    SOLVE[1] + [{"name": "write_file", "args": {"path": "extra.py", "content": "x = 1\n"}}],
]


def test_a_write_after_a_passing_submit_fails_the_trial(scripted_trial):
    res, _ = scripted_trial(WRITE_AFTER_SUBMIT)
    assert not res.success and res.failure_reason == "uncertified_tree"
    assert any("at the step's commit" in r["detail"] for r in kinds(res.events_path, "policy_violation"))
    assert not kinds(res.events_path, "commit")


def test_without_the_hold_the_step_commit_is_not_the_certified_tree(scripted_trial, monkeypatch):
    monkeypatch.setattr(WorkingCopy, "hold", lambda *a: None)
    res, _ = scripted_trial(WRITE_AFTER_SUBMIT)
    assert res.success
    step = next(r for r in kinds(res.events_path, "check") if r["step"] == "s01")
    end = kinds(res.events_path, "trial_end")[0]
    assert end["final_tree_sha"] != step["tree"]  # extra.py is in the commit, never certified


def test_an_honest_trial_records_exactly_the_certified_trees(scripted_trial):
    res, _ = scripted_trial(SOLVE)
    assert res.success
    recs = events(res.events_path)
    checks = {r["step"]: r["tree"] for r in recs if r["kind"] == "check"}
    (commit,) = [r for r in recs if r["kind"] == "commit"]
    assert commit["tree"] == checks["s01"] and recs[-1]["final_tree_sha"] == checks["final"]


EMPTIES = (
    CALC
    + """
import os, shutil, sys
ROOT = os.environ["HOME"]  # LocalSandbox: below <root>/home; the working copy is <root>/work
while not os.path.basename(ROOT).startswith("ctxbench-sbx-"):
    ROOT = os.path.dirname(ROOT)
WORK = os.path.join(ROOT, "work")
if "pytest" in sys.modules and os.getcwd() != WORK:  # only in the final acceptance, on the judge's copy
    for name in os.listdir(WORK):
        p = os.path.join(WORK, name)
        shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
"""
)


def test_a_final_check_that_empties_the_working_copy_fails_the_trial(scripted_trial):
    res, _ = scripted_trial(
        [[{"name": "write_file", "args": {"path": "calc.py", "content": EMPTIES}}], SOLVE[1]]
    )
    assert not res.success and res.failure_reason == "uncertified_tree", res
    final = [r for r in kinds(res.events_path, "check") if r["step"] == "final"]
    assert final and final[-1]["passed"]  # the judge's copy passed; the working copy was emptied


# -- odd working copies: the true reason (which path, why the judge's copy cannot carry it) ------


def _uncertified(box, log) -> str:
    with pytest.raises(AgentFailure) as info:
        certify(box, HarnessCopy(tiny_task()), log, 0, "final", FINAL)
    assert info.value.reason == "uncertified_tree"  # the agent's failure, as any uncertified tree
    (violation,) = [r["detail"] for r in log.records if r["kind"] == "policy_violation"]
    assert violation == info.value.detail
    return violation


def test_a_file_name_of_undecodable_bytes_is_named_as_the_reason(box, log):
    box.write_file("calc.py", CALC)
    with open(os.fsencode(box.workdir) + b"/notes\xff\xfe.txt", "wb") as f:
        f.write(b"made by `run`\n")
    why = _uncertified(box, log)
    assert "'notes\ufffd\ufffd.txt': its name is not valid UTF-8" in why and "1 path(s)" in why
    assert "code under test" not in why  # nothing ran that changed the working copy


def test_compiled_python_an_ignore_rule_lets_in_is_named_as_the_reason(box, log):
    box.write_file("calc.py", CALC)
    box.write_file(".gitignore", "!__pycache__/\n!*.pyc\n")  # the agent's rule against the harness's
    (box.workdir / "__pycache__").mkdir()
    (box.workdir / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"\x00bytecode")
    (box.workdir / "old.pyc").write_bytes(b"\x00bytecode")
    why = _uncertified(box, log)
    assert "2 path(s)" in why and "'__pycache__/calc.cpython-311.pyc': compiled Python" in why
    assert "'old.pyc': compiled Python" in why


def test_a_changed_working_copy_keeps_its_own_reason(box, log):
    """Without an uncarried path the detail stays what it was: the working copy was changed."""
    box.write_file("calc.py", _rewrites_on_import(str(box.workdir)))
    assert "code under test or a later tool call changed the working copy" in _uncertified(box, log)


def test_without_the_diagnosis_the_reason_blames_a_change_nobody_made(box, log, monkeypatch):
    monkeypatch.setattr(certified_tree, "uncarried", lambda sandbox, entries: [])
    box.write_file("calc.py", CALC)
    with open(os.fsencode(box.workdir) + b"/notes\xff.txt", "wb") as f:
        f.write(b"x\n")
    assert "code under test or a later tool call changed the working copy" in _uncertified(box, log)
