"""analysis.calibrate.fidelity: pairs real trials with their replays, per cell and per comparison, and plans the replay."""

from __future__ import annotations

import pandas as pd

from analysis.calibrate.fidelity import cells, comparisons, pairs, plan, report


def frame(
    success: dict[str, list[int]], model: str, rep: int = 0, tokens: int = 1000, why: str = "step_failed"
) -> pd.DataFrame:
    rows = [
        {
            "strategy": s,
            "arm": "compaction",
            "task_family": "signature_migration",
            "task_seed": i,
            "rep": rep,
            "steps": 12,
            "success": ok,
            "turns": 30 + i,
            "prompt_tokens": tokens,
            "model": model,
            "trial": f"{s}{i}",
            "failure_reason": "" if ok else why,
        }
        for s, wins in success.items()
        for i, ok in enumerate(wins)
    ]
    return pd.DataFrame(rows)


REAL = frame({"raw": [0, 0, 1, 0], "ledger": [1, 1, 1, 1]}, "claude")


def test_agreement_per_cell_and_comparison_signs():
    sim = frame({"raw": [0, 1, 1, 0], "ledger": [1, 1, 1, 0]}, "sim_fit", rep=1, tokens=1500)
    p = pairs(REAL, sim, rep_shift=1)
    assert len(p) == 8
    c = cells(p).set_index("strategy")
    assert c.loc["raw", "verdicts_agree"] == 0.75 and c.loc["ledger", "success_sim"] == 0.75
    assert c.loc["raw", "tokens_ratio"] == 1.5
    (k,) = comparisons(p).itertuples()
    assert k.comparison == "ledger - raw" and k.real == 0.75 and k.sim == 0.25 and k.same_sign
    text = report(REAL, sim, rep_shift=1)
    assert "verdicts agree in 75% of 8 paired trials" in text and "keep their sign in 1 of 1" in text
    assert "run the plan first" in report(REAL, sim)  # reps not shifted: nothing pairs


def test_plan_replays_the_same_cells_with_the_calibrated_model():
    (cmd,) = plan(REAL, "sim_fit", "fidelity_x", ["sandbox=local"], rep_shift=1)
    assert cmd[1:4] == ["-m", "bench", "-m"]
    assert {
        "model=sim_fit",
        "task=signature_migration",
        "strategy=ledger,raw",
        "arm=compaction",
        "task.seed=0,1,2,3",
        "rep=1",
        "study.name=fidelity_x",
        "task.size.steps=12",
        "sandbox=local",
    } <= set(cmd)


def test_pairs_that_both_failed_say_whether_they_failed_for_the_same_reason():
    """make real-pilot: every real trial failed a check by turn 4 and every replay ran out of turns;
    "verdicts agree in 100%" alone hid that."""
    sim = frame({"raw": [0, 1, 1, 0], "ledger": [1, 1, 1, 0]}, "sim_fit", rep=1, why="turn_budget")
    text = report(REAL, sim, rep_shift=1)
    assert (
        "of the 2 pairs that failed on both sides, 0 failed for the same reason "
        "(real: step_failed 2; sim: turn_budget 2)"
    ) in text
    same = report(REAL, frame({"raw": [0, 1, 1, 0], "ledger": [1, 1, 1, 0]}, "sim_fit", rep=1), rep_shift=1)
    assert "2 failed for the same reason" in same
