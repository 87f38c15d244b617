"""Across a study's event logs: is every recorded tree the tree the judge certified, and how does
success read with and without the hidden checks (issue 42, items 2 and 3)?

    python -m analysis.measures.certified RESULTS_DIR [RESULTS_DIR ...]

Reads every `trials/*/events.jsonl` below each folder (no MLflow needed). For every certified
step it compares the tree of the step's last passing `check` (`tree`, the judge's copy) with the
`commit` event the harness logged for that step (bench/trial/certified_tree.py), and for every
trial that ran a final check, that check's `tree` with `trial_end.final_tree_sha`. Prints the
counts and every mismatch, then per family: the trials with a verdict (n), how many of them
reached the final acceptance (only there do hidden checks run), success visible-only and
visible-plus-hidden, and how every trial ended (infrastructure failures included, not in n);
exits 1 if anything differs.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
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
    only_hidden = (
        end.failure_reason == "final_check_failed"
        and bool(finals and finals[-1].passed)
        and isinstance(hidden, dict)
        and not hidden.get("passed")
    )
    return end.success or only_hidden, end.success


def _rate(rows: list[tuple[bool, bool, bool]], k: int) -> str:
    return f"{sum(r[k] for r in rows) / len(rows):.3f}" if rows else "-"  # no verdict: no rate, never a 0


def main(folders: Iterable[str]) -> int:
    pairs = differ = trials = 0
    # (visible, visible+hidden, reached final)
    families: dict[str, list[tuple[bool, bool, bool]]] = defaultdict(list)
    ends: dict[str, Counter[str]] = defaultdict(Counter)
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
            steps_without_commit += len(
                {s.step for s in log.of(ev.StepStatus) if s.status == "passed"} - commits
            )
            start, end = log.first(ev.TrialStart), log.first(ev.TrialEnd)
            if start is None:
                continue
            family = start.task_id.split("/")[0]
            ends[family][
                (end.failure_reason or end.outcome_class) if end is not None else "(no trial_end)"
            ] += 1
            seen = visible_success(log)
            if seen is not None:
                families[family].append((*seen, any(c.step == "final" for c in log.of(ev.Check))))
    print(
        f"{trials} trials, {pairs} certified/recorded tree pairs (step commits and final trees), {differ} differ; "
        f"{steps_without_commit} passed step checks whose trial ended before the step's commit"
    )
    print("family                visible-only  visible+hidden  n  reached final  ends")
    for family in sorted(ends):
        rows = families.get(family, [])
        n = len(rows)
        how = ", ".join(f"{why} {count}" for why, count in sorted(ends[family].items()))
        print(
            f"{family:21} {_rate(rows, 0):>12}  {_rate(rows, 1):>14}  {n}  {sum(r[2] for r in rows):13}  {how}"
        )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["results"]))
