"""The final acceptance's hidden checks through certify (bench/trial/hidden_checks.py): code that
special-cases the visible tests passes them and fails the hidden ones; the hidden file is never
in the working copy or any judge's copy, and in Docker code under test that reads everything it
can during the final check (bench/providers/attacks/hidden.py) finds nothing to answer from."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from bench.core.outcomes import InfraFailure
from bench.eventlog.measures import trial_measures
from bench.eventlog.writer import EventLog
from bench.providers.attacks import hidden as peek_attack
from bench.sandbox.base import Sandbox, SandboxConfig
from bench.sandbox.docker import create
from bench.sandbox.judge import HIDDEN_CHANNEL, judge_root
from bench.trial import hidden_checks
from bench.trial.certify import HarnessCopy, certify
from tasks.common.hidden import HIDDEN_CHECK, HIDDEN_PATH
from tests.bench.trial.conftest import CALC, CHECK, FILES, FINAL, SOLVE, events, tiny_task

HIDDEN = (
    (HIDDEN_PATH, "from calc import add\n\n\ndef test_hidden_add():\n    assert add(4000, 2) == 4002\n"),
)
SPECIAL = (
    "def add(a, b):\n    return {(2, 3): 5, (0, 0): 0}.get((a, b), -1)\n"  # right on the visible inputs only
)


def hidden_task():
    return tiny_task(hidden=HIDDEN, hidden_check=HIDDEN_CHECK)


@pytest.fixture
def log(tmp_path):
    return EventLog(tmp_path / "events.jsonl")


@pytest.fixture
def docker_box(sandbox_cfg: SandboxConfig, docker_ready: None) -> Iterator[Sandbox]:
    sandbox = create(sandbox_cfg, FILES, "hidden-test")
    yield sandbox
    sandbox.close()


def _final(box: Sandbox, log: EventLog) -> tuple[dict, bool]:
    out = certify(box, HarnessCopy(hidden_task()), log, 0, "final", FINAL)
    return [r for r in log.records if r["kind"] == "check"][-1], out.passed


def _peeking(box: Sandbox) -> None:
    box.write_file("peek.py", peek_attack.PEEK)
    box.write_file("calc.py", peek_attack.CALC)


@pytest.mark.parametrize("code, visible, hidden", [(CALC, True, True), (SPECIAL, True, False)])
def test_the_final_check_records_visible_and_hidden_apart(box, log, code, visible, hidden):
    box.write_file("calc.py", code)
    out = certify(box, HarnessCopy(hidden_task()), log, 0, "final", FINAL)
    (check,) = [r for r in log.records if r["kind"] == "check"]
    assert check["passed"] is visible and check["hidden"]["passed"] is hidden
    assert [p["part"] for p in check["hidden"]["parts"]] == [HIDDEN_CHECK]
    assert out.passed is (visible and hidden)
    judge = judge_root(box.workdir)
    assert not (judge / "tree" / HIDDEN_PATH).exists() and (judge / "tree" / "calc.py").exists()
    assert not (judge / HIDDEN_CHANNEL).exists()  # the channel is gone once the check is over
    assert HIDDEN_PATH not in box.list_files()


@pytest.mark.docker
@pytest.mark.parametrize("code, visible, hidden", [(CALC, True, True), (SPECIAL, True, False)])
def test_docker_final_check_records_visible_and_hidden_apart(docker_box, log, code, visible, hidden):
    docker_box.write_file("calc.py", code)
    check, passed = _final(docker_box, log)
    assert check["passed"] is visible and check["hidden"]["passed"] is hidden, check
    assert passed is (visible and hidden)
    judge = judge_root(docker_box.workdir)
    assert not (judge / "tree" / HIDDEN_PATH).exists() and not (judge / HIDDEN_CHANNEL).exists()


@pytest.mark.docker
def test_code_that_reads_the_judge_during_the_final_check_finds_no_hidden_test(docker_box, log):
    _peeking(docker_box)
    check, passed = _final(docker_box, log)
    assert check["passed"] is True, check  # the visible tests: special-cased
    assert check["hidden"]["passed"] is False and not passed, check["hidden"]
    assert [p["why"] for p in check["hidden"]["parts"]] == ["exit 1"]
    docker_box.write_file("calc.py", CALC)  # the hidden test did reach the comparer in this sandbox
    check, passed = _final(docker_box, log)
    assert check["hidden"]["passed"] is True and passed, check["hidden"]


@pytest.mark.docker
def test_with_the_hidden_test_in_the_judges_copy_the_peeking_code_passes(docker_box, log, monkeypatch):
    judge_copy = docker_box.judge_copy  # the guard removed: the file where it was before issue 42's fix
    monkeypatch.setattr(
        docker_box, "judge_copy", lambda entries: judge_copy(hidden_checks.with_files(entries, dict(HIDDEN)))
    )
    _peeking(docker_box)
    check, passed = _final(docker_box, log)
    assert check["passed"] is True and check["hidden"]["passed"] is True and passed, check


def test_the_local_sandbox_keeps_no_secret_from_the_code_under_test(box, log):
    """`sandbox=local` isolates nothing, by design (docs/threat_model.md): the comparer's copy is
    readable by the code under test there, and the peeking code passes."""
    _peeking(box)
    check, passed = _final(box, log)
    assert check["hidden"]["passed"] is True and passed, check


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


def test_hidden_checks_that_never_reach_the_judge_are_the_harnesss_failure(box, log, monkeypatch, tmp_path):
    """What comes off the channel is not the harness's: the launcher runs no part (a reader of the
    agent's must never meet a writer still waiting), and the check is a harness_error, never the
    agent's failure."""
    garbled = tmp_path / "channel"
    garbled.write_text("not the harness's JSON")
    monkeypatch.setattr(hidden_checks, "deliver", lambda *_: contextlib.nullcontext(str(garbled)))
    box.write_file("calc.py", CALC)
    with pytest.raises(InfraFailure) as err:
        certify(box, HarnessCopy(hidden_task()), log, 0, "final", FINAL)
    assert err.value.reason == "harness_error" and "never reached the judge" in str(err.value)
