"""What each strategy shows beyond the transcript, as its trials recorded it (docs/instrument.md §6).

A channel is a fact a strategy puts in the context that a raw agent reaches only by fetching
it with the tools: ledger's FILES and TREE, the drift note (ledger, subagent), invariants
written by the harness (`invariants_from=harness`). Each is a config switch recorded with the
run (`param.strategy.*`); a trial recorded before a switch existed had it on (TREE, drift note
were always shown). The report lists them beside each strategy, so a difference can be read
against what each side was given.
"""

from __future__ import annotations

import pandas as pd

# (channel, param column, value that means "on", the value a trial before the switch had)
CHANNELS = (
    ("files", "param.strategy.files_budget_tokens", lambda v: v not in ("0", "0.0"), "4000"),
    ("tree", "param.strategy.tree", lambda v: v.lower() == "true", "True"),
    ("drift_note", "param.strategy.drift_note", lambda v: v.lower() == "true", "True"),
    ("harness_invariants", "param.strategy.invariants_from", lambda v: v == "harness", "harness"),
)
HAS = {
    "ledger": ("files", "tree", "drift_note", "harness_invariants"),
    "subagent": ("drift_note", "harness_invariants"),
}


def label(row: pd.Series) -> str:
    """`ledger[files,tree,drift_note]`: the channels on in one trial; `raw[]` for none."""
    strategy = str(row.get("strategy", ""))
    on = [
        name
        for name, col, is_on, before in CHANNELS
        if name in HAS.get(strategy, ())
        and is_on(str(row.get(col) if pd.notna(row.get(col)) and row.get(col) != "" else before))
    ]
    return f"{strategy}[{','.join(on)}]"


def listing(trials: pd.DataFrame) -> pd.DataFrame:
    """Per strategy (and ablation point), the channels its trials had on, and how many trials."""
    t = trials.assign(channels=trials.apply(label, axis=1))
    keys = ["strategy", "sensitivity_point"] if "sensitivity_point" in t else ["strategy"]
    return t.groupby([*keys, "channels"]).size().rename("trials").reset_index()
