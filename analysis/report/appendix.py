"""The report's appendix text: the instrument (docs/instrument.md). Its numbers are computed
in analysis.measures.appendix; this is how the report words them."""

from __future__ import annotations

from functools import partial

import pandas as pd

from analysis import render
from analysis.load import labels


def _table(frame: pd.DataFrame | None, level: str) -> str:
    return render.table(frame if frame is None else labels.headed_frame(frame, level))


def section(a: dict, level: str = "strategy") -> list[str]:
    """The appendix section of the report (`a` is `Analysis.instrument`, analysis.measures.appendix);
    its tables' level column headed as `level` says (analysis/load/labels.py)."""
    table = partial(_table, level=level)
    share = a.get("seed_share") or {}
    side = a.get("invariants_from")
    sources = (
        ""
        if side is None or side.empty
        else "Ledger and subagent in this report carried invariants from: "
        + ", ".join(f"{src} ({int(n)} trials)" for src, n in side.groupby("source")["n"].sum().items())
        + "."
    )
    out = [
        "## Appendix: the instrument",
        "",
        *([sources, ""] if sources else []),
        "### What each strategy showed beyond the transcript (its channels, docs/instrument.md §6)",
        "",
        "Every strategy can reach the same facts through the tools (git status/log, read_file); a channel is "
        "what a strategy puts in the context on its own, each a switch recorded with the run.",
        "",
        table(a.get("channels")),
        "",
        "Measures from each trial's event log (bench/eventlog/measures.py, docs/instrument.md): first-attempt "
        "pass rate (steps whose first check passed), recovered failures and the turns they took, stale edits "
        "(an edit whose base was older than the file), invariant recall (share of in-force invariants the "
        "context stated at each step's head), tidy-ups done. `strategy:harness` carried the "
        "harness-written invariants too (`strategy.invariants_from=harness`, a labelled channel; the default "
        "carries only the model's own hand-offs).",
        "",
        "### Recovery and context, per cell (means)",
        "",
        table(a.get("recovery")),
    ]
    exp = a.get("expected")
    out += [
        "### The sim's expected success in closed form against the observed rate",
        "",
        "expected = 1 - mean trap hazard, the hazard of a trial being the sum of p_tempt (1 - q) over its "
        "temptation decisions while still at risk (q: the protection its context gave; docs/instrument.md); "
        "observed with a Wilson 95% CI. Other failure channels (turn budgets, a clobber only the final "
        "acceptance catches) can only pull observed below expected.",
        "",
        table(exp) if exp is not None and not exp.empty else "_(no simulated-model decisions logged)_",
        "",
    ]
    if share:
        out += [
            "### How much the task explains",
            "",
            f"Over {share['n_trials']} trials ({share['n_tasks']} tasks x {share['n_cells']} cells), the task "
            f"(family, seed) explains eta² = {render.num(share['task_eta2'])} of the outcome variance and the cell "
            f"({level} x arm) {render.num(share['cell_eta2'])}. Tasks that succeed in every cell: "
            f"{share['tasks_always_succeed']}; that fail in every cell: {share['tasks_always_fail']}; certain by "
            f"construction (no decision that could fail them anywhere, or none that could pass): "
            f"{share['tasks_certain_by_construction']}.",
            "",
        ]
    out += [
        "### Ablations: each mechanism switched off",
        "",
        "Each switch against all switches on, paired on (strategy, arm, task, rep); run `experiment=ablation`. "
        "A switched-off mechanism's measure goes to its no-effect value.",
        "",
        table(a.get("ablations")),
        "### Where the carried invariants come from",
        "",
        table(a.get("invariants_from")),
    ]
    return out
