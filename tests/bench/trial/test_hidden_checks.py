"""The final acceptance's hidden checks through certify (bench/trial/hidden_checks.py): code that
special-cases the visible tests passes them and fails the hidden ones; the hidden file is never
in the working copy, a step check's copy, or the judge's copy once the final check is over."""

from __future__ import annotations

import pytest

from bench.eventlog.events import EventLog
from bench.eventlog.measures import trial_measures
from bench.trial.certify import HarnessCopy, certify
from tasks.common.hidden import HIDDEN_CHECK, HIDDEN_PATH
from tests.bench.trial.conftest import CALC, CHECK, FINAL, SOLVE, events, tiny_task

HIDDEN = ((HIDDEN_PATH, "from calc import add\n\n\ndef test_hidden_add():\n    assert add(4000, 2) == 4002\n"),)
SPECIAL = "def add(a, b):\n    return {(2, 3): 5, (0, 0): 0}.get((a, b), -1)\n"  # right on the visible inputs only


def hidden_task():
    return tiny_task(hidden=HIDDEN, hidden_check=HIDDEN_CHECK)


@pytest.fixture
def log(tmp_path):
    return EventLog(tmp_path / "events.jsonl")


@pytest.mark.parametrize("code, visible, hidden", [(CALC, True, True), (SPECIAL, True, False)])
def test_the_final_check_records_visible_and_hidden_apart(box, log, code, visible, hidden):
    box.write_file("calc.py", code)
    out = certify(box, HarnessCopy(hidden_task()), log, 0, "final", FINAL)
    (check,) = [r for r in log.records if r["kind"] == "check"]
    assert check["passed"] is visible and check["hidden"]["passed"] is hidden
    assert [p["part"] for p in check["hidden"]["parts"]] == [HIDDEN_CHECK]
    assert out.passed is (visible and hidden)
    judge = box.workdir.parent / "judge" / "tree"
    assert not (judge / HIDDEN_PATH).exists() and (judge / "calc.py").exists()  # gone once the check is over
    assert HIDDEN_PATH not in box.list_files()


def test_a_step_check_never_runs_or_writes_the_hidden_checks(box, log):
    box.write_file("calc.py", SPECIAL)
    assert certify(box, HarnessCopy(hidden_task()), log, 0, "s01", CHECK).passed
    (check,) = [r for r in log.records if r["kind"] == "check"]
    assert "hidden" not in check and "test_hidden" not in check["output"]


def test_special_casing_is_a_visible_success_and_a_failure(scripted_trial):
    script = [[{"name": "write_file", "args": {"path": "calc.py", "content": SPECIAL}}], SOLVE[1]]
    res, _ = scripted_trial(script, task=hidden_task())
    assert not res.success and res.failure_reason == "final_check_failed"
    measures = trial_measures(events(res.events_path))
    assert measures["success_visible"] == 1.0
    res, _ = scripted_trial(SOLVE, task=hidden_task())
    assert res.success and trial_measures(events(res.events_path))["success_visible"] == 1.0


def test_without_hidden_checks_special_casing_succeeds(scripted_trial):
    script = [[{"name": "write_file", "args": {"path": "calc.py", "content": SPECIAL}}], SOLVE[1]]
    res, _ = scripted_trial(script)  # the same task, no hidden checks: the guard removed
    assert res.success
