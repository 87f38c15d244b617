"""The report's token-accounting table: the harness's count of each request against the
provider's, per model (issue 21, item 4)."""

from __future__ import annotations

import pandas as pd

from analysis.measures.token_check import token_accounting


def test_the_error_distribution_per_model():
    curves = pd.DataFrame(
        {
            "model": ["sim"] * 3 + ["smollm2:smollm2-135m-instruct@127.0.0.1:8091"] * 2,
            "harness_tokens": [1000, 2000, 3000, 659, 938],
            "prompt_tokens": [1000, 2000, 3000, 1663, 2148],
        }
    )
    t = token_accounting(curves).set_index("model")
    assert t.loc["sim", "error_max"] == 0 and t.loc["sim", "undercounted_share"] == 0
    real = t.loc["smollm2:smollm2-135m-instruct@127.0.0.1:8091"]
    assert real["calls"] == 2 and real["undercounted_share"] == 1.0
    assert abs(real["error_max"] - (1663 - 659) / 1663) < 1e-3


def test_runs_without_the_harness_count_give_an_empty_table():
    assert token_accounting(pd.DataFrame({"model": ["sim"], "prompt_tokens": [5]})).empty
    assert token_accounting(pd.DataFrame()).empty
