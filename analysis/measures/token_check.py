"""The harness's token count of each request next to the provider's (issue 21).

Per model call the harness logs its own count of the whole request (messages and tool schemas,
its tokenizer) as the per-turn metric `harness_tokens`, beside the provider's `prompt_tokens`.
They differ by the model's tokenizer, the chat template and what a server adds (a real
llama-server counted 1,663 tokens where the harness counted 659). The context budget follows the
provider's count once it has one (bench/trial/context_window.py); this table shows, per model, how far
the harness's own count was off: error = (provider - harness) / provider, so a positive error
is a request the harness under-counted.
"""

from __future__ import annotations

import pandas as pd

COLUMNS = [
    "model",
    "calls",
    "harness_tokens",
    "provider_tokens",
    "error_p10",
    "error_median",
    "error_p90",
    "error_max",
    "undercounted_share",
]


def token_accounting(curves: pd.DataFrame) -> pd.DataFrame:
    if curves.empty or "harness_tokens" not in curves:
        return pd.DataFrame(columns=COLUMNS)
    c = curves.dropna(subset=["harness_tokens", "prompt_tokens"])
    c = c[(c["prompt_tokens"] > 0) & (c["harness_tokens"] > 0)]
    rows = []
    for model, g in c.groupby("model", sort=True):
        err = (g["prompt_tokens"] - g["harness_tokens"]) / g["prompt_tokens"]
        rows.append(
            {
                "model": model,
                "calls": len(g),
                "harness_tokens": int(g["harness_tokens"].sum()),
                "provider_tokens": int(g["prompt_tokens"].sum()),
                "error_p10": round(err.quantile(0.1), 3),
                "error_median": round(err.median(), 3),
                "error_p90": round(err.quantile(0.9), 3),
                "error_max": round(err.max(), 3),
                "undercounted_share": round(float((err > 0).mean()), 3),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)
