"""Across a study's event logs: is every recorded tree the tree the judge certified, and how does
success read with and without the hidden checks (issue 42, items 2 and 3)?

    python -m analysis.measures.certified RESULTS_DIR [RESULTS_DIR ...]

Reads every `trials/*/events.jsonl` below each folder (no MLflow needed). For every certified
step it compares the tree of the step's last passing `check` (`tree`, the judge's copy) with the
`commit` event the harness logged for that step (bench/trial/certified_tree.py), and for every
trial that ran a final check, that check's `tree` with `trial_end.final_tree_sha`. Prints the
counts and every mismatch, then success per family visible-only and visible-plus-hidden; exits
1 if anything differs.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from ctxlog import events as ev
from ctxlog.reader import Log


def trial_pairs(log: Log) -> list[tuple[str, str, str]]:
    """(what, certified tree, recorded tree) for each certified step's commit and the final tree."""
    passed: dict[str, str] = {}
    out = []
    for e in log.events:
        if isinstance(e, ev.Check) and e.step != "final" and e.passed and e.tree:
            passed[e.step] = e.tree
        elif isinstance(e, ev.Commit):
            out.append((f"step {e.step}", passed.get(e.step, "(no passing check)"), e.tree))
    finals = [c for c in log.of(ev.Check) if c.step == "final"]
    end = log.first(ev.TrialEnd)
    if finals and end is not None and end.failure_reason != "uncertified_tree":
        out.append(("final tree", finals[-1].tree or "(none)", end.final_tree_sha))
    return out


def visible_success(log: Log) -> tuple[bool, bool] | None:
    """(visible-only, visible-plus-hidden) success of a finished trial, None if it has no verdict."""
    end = log.first(ev.TrialEnd)
    if end is None or end.outcome_class not in ("success", "agent_failure"):
        return None
    finals = [c for c in log.of(ev.Check) if c.step == "final"]
    hidden = finals[-1].hidden if finals else None
    only_hidden = (end.failure_reason == "final_check_failed" and bool(finals and finals[-1].passed)
                   and isinstance(hidden, dict) and not hidden.get("passed"))
    return end.success or only_hidden, end.success


def main(folders: Iterable[str]) -> int:
    pairs = differ = trials = 0
    families: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    steps_without_commit = 0
    for folder in folders:
        for path in sorted(Path(folder).glob("**/trials/*/events.jsonl")):
            log = Log.from_path(path)
            trials += 1
            for what, certified, recorded in trial_pairs(log):
                pairs += 1
                if certified != recorded:
                    differ += 1
                    print(f"DIFFERS {path.parent.name} {what}: certified {certified}, recorded {recorded}")
            commits = {e.step for e in log.of(ev.Commit)}
            steps_without_commit += len({s.step for s in log.of(ev.StepStatus) if s.status == "passed"} - commits)
            start = log.first(ev.TrialStart)
            seen = visible_success(log)
            if start is not None and seen is not None:
                families[start.task_id.split("/")[0]].append(seen)
    print(f"{trials} trials, {pairs} certified/recorded tree pairs (step commits and final trees), {differ} differ; "
          f"{steps_without_commit} passed step checks whose trial ended before the step's commit")
    print("family                visible-only  visible+hidden  n")
    for family, rows in sorted(families.items()):
        n = len(rows)
        print(f"{family:21} {sum(v for v, _ in rows) / n:12.3f}  {sum(h for _, h in rows) / n:14.3f}  {n}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["results"]))
