"""analysis.calibrate.fidelity: pairs real trials with their replays, per cell and per comparison, and plans the replay."""

from __future__ import annotations

import pandas as pd

from analysis.calibrate.fidelity import cells, comparisons, pairs, plan, report


def frame(success: dict[str, list[int]], model: str, rep: int = 0, tokens: int = 1000) -> pd.DataFrame:
    rows = [{"strategy": s, "arm": "compaction", "task_family": "signature_migration", "task_seed": i, "rep": rep,
             "steps": 12, "success": ok, "turns": 30 + i, "prompt_tokens": tokens, "model": model, "trial": f"{s}{i}"}
            for s, wins in success.items() for i, ok in enumerate(wins)]
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
    assert {"model=sim_fit", "task=signature_migration", "strategy=ledger,raw", "arm=compaction",
            "task.seed=0,1,2,3", "rep=1", "study.name=fidelity_x", "task.size.steps=12", "sandbox=local"} <= set(cmd)
