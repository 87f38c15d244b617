"""analysis.measures.certified: a study's recorded trees against the trees the judge certified,
and success with and without the hidden checks, from event logs alone."""

from __future__ import annotations

import json

from analysis.measures.certified import main
from ctxlog import events as ev


def _trial(root, name, commit_tree, final_tree, hidden_passed, success):
    recs = [ev.TrialStart(task_id="signature_migration/3"),
            ev.Check(step="s01", passed=True, tree="a" * 40),
            ev.StepStatus(step="s01", status="passed"),
            ev.Commit(step="s01", commit="c" * 40, tree=commit_tree, certified="a" * 40),
            ev.Check(step="final", passed=True, tree="b" * 40, hidden={"passed": hidden_passed, "parts": []}),
            ev.TrialEnd(success=success, outcome_class="success" if success else "agent_failure",
                        failure_reason="" if success else "final_check_failed", final_tree_sha=final_tree)]
    path = root / "trials" / name / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e.record()) + "\n" for e in recs))


def test_equal_trees_pass_and_the_visible_only_success_counts_the_hidden_failure(tmp_path, capsys):
    _trial(tmp_path, "t1", "a" * 40, "b" * 40, True, True)
    _trial(tmp_path, "t2", "a" * 40, "b" * 40, False, False)  # failed on the hidden checks only
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 trials, 4 certified/recorded tree pairs (step commits and final trees), 0 differ" in out
    assert "signature_migration          1.000           0.500  2" in out


def test_a_recorded_tree_that_was_not_certified_is_named(tmp_path, capsys):
    _trial(tmp_path, "t1", "d" * 40, "b" * 40, True, True)
    assert main([str(tmp_path)]) == 1
    assert f"DIFFERS t1 step s01: certified {'a' * 40}, recorded {'d' * 40}" in capsys.readouterr().out
