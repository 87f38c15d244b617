"""analysis.measures.certified: a study's recorded trees against the trees the judge certified,
and success with and without the hidden checks, from event logs alone."""

from __future__ import annotations

import json

from analysis.measures.certified import main
from ctxlog import events as ev


def _trial(root, name, commit_tree, final_tree, hidden_passed, success):
    recs = [
        ev.TrialStart(task_id="signature_migration/3"),
        ev.Check(step="s01", passed=True, tree="a" * 40),
        ev.StepStatus(step="s01", status="passed"),
        ev.Commit(step="s01", commit="c" * 40, tree=commit_tree, certified="a" * 40),
        ev.Check(step="final", passed=True, tree="b" * 40, hidden={"passed": hidden_passed, "parts": []}),
        ev.TrialEnd(
            success=success,
            outcome_class="success" if success else "agent_failure",
            failure_reason="" if success else "final_check_failed",
            final_tree_sha=final_tree,
        ),
    ]
    path = root / "trials" / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e.record()) + "\n" for e in recs))


def test_equal_trees_pass_and_the_visible_only_success_counts_the_hidden_failure(tmp_path, capsys):
    _trial(tmp_path, "t1", "a" * 40, "b" * 40, True, True)
    _trial(tmp_path, "t2", "a" * 40, "b" * 40, False, False)  # failed on the hidden checks only
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 trials, 4 certified/recorded tree pairs (step commits and final trees), 0 differ" in out
    assert (
        "signature_migration          1.000           0.500  2              2  final_check_failed 1, success 1"
        in out
    )


def test_trials_that_never_reach_the_final_acceptance_are_counted_with_how_they_ended(tmp_path, capsys):
    def ended(name, task_id, outcome_class, reason):
        path = tmp_path / "trials" / name / "events.jsonl"
        path.parent.mkdir(parents=True)
        recs = [
            ev.TrialStart(task_id=task_id),
            ev.Check(step="s01", passed=False, tree="a" * 40),
            ev.TrialEnd(success=False, outcome_class=outcome_class, failure_reason=reason),
        ]
        path.write_text("".join(json.dumps(e.record()) + "\n" for e in recs))

    _trial(tmp_path, "t1", "a" * 40, "b" * 40, False, False)
    ended("t2", "signature_migration/4", "agent_failure", "output_truncation")
    ended("t3", "config_rename/1", "agent_failure", "timeout")
    ended("t4", "config_rename/2", "infrastructure_failure", "sandbox_lost")  # no verdict: not in n
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (
        "config_rename                0.000           0.000  1              0  sandbox_lost 1, timeout 1"
        in out
    )
    assert (
        "signature_migration          0.500           0.000  2              1  "
        "final_check_failed 1, output_truncation 1"
    ) in out


def test_a_family_with_no_verdict_has_no_rate(tmp_path, capsys):
    path = tmp_path / "trials" / "t1" / "events.jsonl"
    path.parent.mkdir(parents=True)
    recs = [
        ev.TrialStart(task_id="batch_writes/1"),
        ev.TrialEnd(outcome_class="infrastructure_failure", failure_reason="provider_error"),
    ]
    path.write_text("".join(json.dumps(e.record()) + "\n" for e in recs))
    assert main([str(tmp_path)]) == 0
    assert (
        "batch_writes                     -               -  0              0  provider_error 1"
        in capsys.readouterr().out
    )


def test_a_recorded_tree_that_was_not_certified_is_named(tmp_path, capsys):
    _trial(tmp_path, "t1", "d" * 40, "b" * 40, True, True)
    assert main([str(tmp_path)]) == 1
    assert f"DIFFERS t1 step s01: certified {'a' * 40}, recorded {'d' * 40}" in capsys.readouterr().out
