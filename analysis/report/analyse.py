"""One call from loaded runs to every table and test of the report (docs/design.md §11)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from analysis.diff import mismatch
from analysis.fairness import channels
from analysis.load import Runs, accounting, labels
from analysis.measures import appendix, tables
from analysis.measures.token_check import token_accounting


@dataclass
class Analysis:
    runs: Runs
    reference: str
    reference_arm: str
    success: pd.DataFrame
    vs_reference: pd.DataFrame
    continuous: pd.DataFrame
    variance: pd.DataFrame
    interaction: pd.DataFrame
    interaction_result: dict
    within: pd.DataFrame
    across: pd.DataFrame
    attribution: pd.DataFrame
    cache: pd.DataFrame
    cost: pd.DataFrame
    excluded: pd.DataFrame
    failures: pd.DataFrame
    divergence: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)
    planned: pd.DataFrame = field(default_factory=pd.DataFrame)  # every planned trial's state (accounting)
    # analysis/measures/appendix.py: tables by name, and seed_share
    instrument: dict = field(default_factory=dict)
    # harness vs provider token counts (token_check)
    tokens: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def level(self) -> str:
        """How the level column is headed for a reader (analysis/load/labels.py: level_heading)."""
        return labels.level_heading(self.runs.trials)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table of the report by CSV name (the trials themselves included)."""
        inter = pd.DataFrame([self.interaction_result])
        return {
            "trials": self.runs.trials,
            "success": self.success,
            "success_vs_reference": self.vs_reference,
            "continuous_vs_reference": self.continuous,
            "token_variance": self.variance,
            "interaction_contrasts": self.interaction,
            "interaction_test": inter,
            "mismatch_within_cell": self.within,
            "mismatch_vs_baseline_pairs": self.across,
            "mismatch_attribution": self.attribution,
            "cache_vs_consistency": self.cache,
            "cost_per_success": self.cost,
            "excluded": self.excluded,
            "failure_reasons": self.failures,
            "token_accounting": self.tokens,
            "planned_trials": self.planned,
            **({"trajectory_divergence": self.divergence} if not self.divergence.empty else {}),
            **{
                f"appendix_{k}": v
                for k, v in self.instrument.items()
                if isinstance(v, pd.DataFrame) and not v.empty
            },
        }


def analyse(
    runs: Runs,
    reference: str = "raw",
    reference_arm: str = "baseline",
    fetch: mismatch.EventFetcher | None = None,
    seed: int = 0,
    divergence: str = "outcome",
) -> Analysis:
    """All comparisons for ``runs``. ``fetch`` returns a run's parsed events.jsonl
    (default: download from MLflow, only for the pairs ``divergence`` selects)."""
    t = runs.trials
    planned = accounting.planned_trials(runs)
    notes = list(runs.notes) + accounting.notes(planned)
    if reference not in set(t["strategy"]):
        notes.append(f"reference strategy {reference!r} has no trials: paired comparisons are empty")
    if reference_arm not in set(t["arm"]):
        notes.append(f"reference arm {reference_arm!r} has no trials: cross-arm mismatch is empty")
    if t["model"].nunique(dropna=False) > 1:
        notes.append("several models: cells pool them, but every pair is matched within one model")
    fetch = fetch or mismatch.mlflow_event_fetcher(
        runs.tracking_uri, dict(zip(t["run_id"], t["artifact_uri"], strict=True))
    )
    within = mismatch.within_cell(t)
    across = mismatch.cross_arm(t, reference_arm, fetch, divergence=divergence)
    inter_table, inter_result = tables.interaction(t, reference, reference_arm, seed=seed)
    return Analysis(
        runs=runs,
        reference=reference,
        reference_arm=reference_arm,
        success=tables.success_table(t, planned),
        vs_reference=tables.success_vs_reference(t, reference, seed=seed, planned=planned),
        continuous=tables.continuous_vs_reference(t, reference, seed=seed),
        variance=tables.token_variance(t, reference),
        interaction=inter_table,
        interaction_result=inter_result,
        within=within,
        across=across,
        attribution=mismatch.attribution_summary(across),
        cache=tables.cache_vs_consistency(t, within, across),
        cost=tables.cost_per_success(t),
        excluded=tables.excluded_summary(runs.excluded),
        failures=tables.failure_reasons(t),
        notes=notes,
        planned=planned,
        divergence=mismatch.divergence_summary(across) if divergence == "all" else pd.DataFrame(),
        tokens=token_accounting(runs.curves),
        instrument={
            "recovery": appendix.recovery(t),
            "expected": appendix.expected_vs_observed(t),
            "seed_share": appendix.seed_share(t),
            "ablations": appendix.ablations(t),
            "invariants_from": appendix.invariants_from(t),
            "channels": channels.listing(t),
        },
    )
