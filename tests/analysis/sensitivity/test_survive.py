"""analysis.sensitivity: a comparison that holds everywhere survives; one that flips at a point does not."""

from __future__ import annotations

import pandas as pd

from analysis.sensitivity.survive import POINT, comparisons, section, verdict


def trials(points: dict[str, dict[str, list[int]]]) -> pd.DataFrame:
    """points -> strategy -> success per paired task (12 tasks: 2 arms x 6 seeds)."""
    rows = []
    for point, by in points.items():
        for strategy, wins in by.items():
            for i, ok in enumerate(wins):
                rows.append(
                    {
                        POINT: point,
                        "param.sensitivity.varies": "x",
                        "strategy": strategy,
                        "arm": ("compaction", "drift_compaction")[i % 2],
                        "task_family": "f",
                        "task_seed": i // 2,
                        "rep": 0,
                        "study": "sensitivity",
                        "model": "sim",
                        "success": ok,
                        "tokens_input_total": 1000 * (2 if strategy == "raw" else 1) + i,
                    }
                )
    return pd.DataFrame(rows)


ALL, NONE = [1] * 12, [0] * 12
STUDY = trials(
    {
        "base": {"raw": NONE, "ledger": ALL},
        "tempt_high": {"raw": [1] * 10 + [0] * 2, "ledger": [0] * 6 + [1] * 6},
        "recall_low": {"raw": NONE, "ledger": ALL},
    }
)


def test_sign_and_significance_per_point():
    comp = comparisons(STUDY)
    success = comp[comp["measure"] == "success"].set_index("point")
    assert success.loc["base", "diff"] == -1.0 and bool(success.loc["base", "significant"])
    assert success.loc["tempt_high", "diff"] > 0
    tokens = comp[comp["measure"] == "tokens"].set_index("point")
    assert (tokens["diff"] > 0).all()  # raw reads twice the tokens of ledger at every point
    assert verdict(comp[comp["measure"] == "success"]) == "no: reverses at tempt_high"
    assert verdict(comp[comp["measure"] == "tokens"]).startswith(("yes", "sign yes"))


def test_a_difference_that_vanishes_is_not_called_a_reversal():
    study = trials({"base": {"raw": NONE, "ledger": ALL}, "tempt_low": {"raw": ALL, "ledger": ALL}})
    comp = comparisons(study)
    assert verdict(comp[comp["measure"] == "success"]) == "no: vanishes at tempt_low"


def test_trials_outside_the_sweep_are_left_out():
    """A study may also hold trials run without a point ("" from the loader): they belong to no
    point, so they neither count as one nor join a point's pairs."""
    stray = STUDY[STUDY[POINT] == "base"].assign(**{POINT: ""})
    text = section(pd.concat([STUDY, stray], ignore_index=True))
    assert "`base` (x, 24 trials)" in text and "`` (" not in text
    assert section(stray) == ""


def test_the_section_names_its_points_and_is_empty_for_other_studies():
    text = section(STUDY)
    assert text.startswith("## Which conclusions survive")
    assert "| comparison | base | recall_low | tempt_high | survives? |" in text
    assert "`tempt_high` (x, 24 trials)" in text
    assert section(STUDY.drop(columns=[POINT])) == ""
