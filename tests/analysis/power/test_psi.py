"""psi both ways, and which one a pilot measured."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.power import psi


def test_psi_both_ways():
    assert psi.independent(0.8, 0.7) == pytest.approx(0.8 * 0.3 + 0.7 * 0.2)
    assert psi.shared(0.7 - 0.8) == pytest.approx(0.1)
    assert psi.independent(1.0, 0.0) == 1.0 and psi.independent(0.5, 0.5) == 0.5


@pytest.mark.parametrize(
    "cols, mode",
    [
        ({"param.model.provider": ["sim", "sim"]}, "shared"),  # before the switch: shared
        (
            {"param.model.provider": ["sim", "sim"], "param.model.draws": ["independent", "independent"]},
            "independent",
        ),
        ({"param.model.provider": ["sim", "sim"], "param.model.draws": ["independent", "shared"]}, "mixed"),
        ({"param.model.provider": ["anthropic", "openai"]}, "independent"),  # a real model draws on its own
        ({"param.model.provider": ["oracle", "anthropic"], "param.model.draws": ["shared", None]}, "mixed"),
    ],
)
def test_which_draws_a_pilot_made(cols, mode):
    assert psi.draws(pd.DataFrame(cols)) == mode


def test_channels_are_listed_beside_each_strategy_from_the_run_params():
    from analysis.fairness import channels

    t = pd.DataFrame(
        [
            {"strategy": "raw"},
            {"strategy": "ledger"},  # recorded before the switches: TREE and the note were always on
            {
                "strategy": "ledger",
                "param.strategy.tree": "False",
                "param.strategy.drift_note": "True",
                "param.strategy.invariants_from": "model",
                "param.strategy.files_budget_tokens": "4000",
            },
            {
                "strategy": "subagent",
                "param.strategy.invariants_from": "harness",
                "param.strategy.drift_note": "False",
            },
        ]
    )
    assert [channels.label(r) for _, r in t.iterrows()] == [
        "raw[]",
        "ledger[files,tree,drift_note,harness_invariants]",
        "ledger[files,drift_note]",
        "subagent[harness_invariants]",
    ]
    assert channels.listing(t)["trials"].sum() == 4
