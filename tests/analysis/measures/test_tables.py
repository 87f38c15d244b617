"""analysis.measures.tables: which paired test a comparison gets, and that its units are seeds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.measures import tables
from analysis.power import pilot
from analysis.power import seeds as seedpower
from analysis.stats import inference as stats


def _trials(seeds: int, reps: int, rng) -> pd.DataFrame:
    """raw vs ledger in one arm; ledger's luck is shared by a seed's reps (it wins or loses
    all of them together), raw succeeds half the time."""
    rows = []
    for seed in range(seeds):
        ledger_seed = rng.random() < 0.7
        for rep in range(reps):
            for strategy, ok in (("raw", rng.random() < 0.5), ("ledger", ledger_seed)):
                rows.append(
                    {
                        "study": "s",
                        "model": "sim",
                        "task_family": "f",
                        "task_seed": seed,
                        "sensitivity_point": "",
                        "rep": rep,
                        "strategy": strategy,
                        "arm": "baseline",
                        "success": int(ok),
                        "tokens_input_total": 1000.0
                        + 300 * ledger_seed * (strategy == "ledger")
                        + rng.normal(0, 50),
                    }
                )
    return pd.DataFrame(rows)


def test_one_rep_per_seed_keeps_exact_mcnemar():
    t = _trials(12, 1, np.random.default_rng(1))
    v = tables.success_vs_reference(t, "raw").iloc[0]
    assert v["test"] == "exact McNemar" and v["n_pairs"] == v["n_seeds"] == 12
    assert v["p"] == stats.mcnemar_exact(v["b"], v["c"])
    d = pilot.binary(
        t.loc[t.strategy == "ledger", "success"].to_numpy(),
        t.loc[t.strategy == "raw", "success"].to_numpy(),
        range(12),
    )
    assert v["power"] == pilot.binary_power(d, 0.05, 1)["power"]


def test_several_reps_per_seed_get_the_seed_test_and_seed_bootstrap():
    t = _trials(10, 3, np.random.default_rng(2))
    v = tables.success_vs_reference(t, "raw").iloc[0]
    led, raw = t[t.strategy == "ledger"].reset_index(), t[t.strategy == "raw"].reset_index()
    assert v["test"] == tables.SEED_TEST and (v["n_pairs"], v["n_seeds"]) == (30, 10)
    clustered = stats.mcnemar_clustered(led["success"], raw["success"], led["task_seed"])
    assert v["p"] == clustered["p"] and v["x2"] == clustered["stat"]
    assert v["p"] != stats.mcnemar_exact(v["b"], v["c"])  # the pairs-as-independent p would differ
    assert v["p_holm"] == v["p"]  # a family of one
    # The interval resamples whole seeds (a seed's 3 reps go in or out together).
    assert (v["ci_lo"], v["ci_hi"]) == stats.paired_bootstrap_ci(
        led["success"], raw["success"], clusters=led["task_seed"].astype(str)
    )
    assert (v["ci_lo"], v["ci_hi"]) != stats.paired_bootstrap_ci(led["success"], raw["success"])
    assert v["power"] == seedpower.power(10, 3, v["icc"], *pilot.sizing.split(v["psi"], pilot.EFFECT), 0.05)


def test_continuous_with_reps_tests_seed_means():
    t = _trials(8, 2, np.random.default_rng(3))
    c = tables.continuous_vs_reference(t, "raw", measures=("tokens_input_total",)).iloc[0]
    led, raw = t[t.strategy == "ledger"].reset_index(), t[t.strategy == "raw"].reset_index()
    d = led["tokens_input_total"] - raw["tokens_input_total"]
    means = d.groupby(led["task_seed"]).mean().to_numpy()
    assert c["test"] == tables.SEED_WILCOXON and (c["n_pairs"], c["n_seeds"]) == (16, 8)
    assert c["p"] == pytest.approx(stats.wilcoxon_paired(means, np.zeros(8))[1])
    assert c["mde"] == pytest.approx(
        pilot.sizing.paired_mde(8, means.std(ddof=1), 0.05, 0.8, pilot.sizing.ARE_MIN)
    )
    few = tables.continuous_vs_reference(
        _trials(4, 2, np.random.default_rng(3)), "raw", measures=("tokens_input_total",)
    ).iloc[0]
    assert few["mde"] == math.inf  # 4 seeds cannot reach 0.05: the smallest p is 2/16
