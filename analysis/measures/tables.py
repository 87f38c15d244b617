"""The study's tables: one tidy DataFrame each, every estimate beside its n.

Comparisons are paired: a strategy is compared with the reference strategy on the
same (study, model, task family, task seed, rep) in the same arm, and intervals
resample whole tasks (reps of one task share their luck), as do the tests when a task
has several reps. A Holm family is one measure across every (arm, strategy) comparison
of that measure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.load import CELL, PAIR_KEY, TASK_KEY, accounting, sort_cells
from analysis.power import pilot
from analysis.stats import inference as stats

CONTINUOUS = {"tokens_input_total": "input tokens", "cost_usd": "cost (USD)", "latency_s": "latency (s)"}
# The tests used when a task seed has several reps (docs/power.md, "Seeds and reps").
SEED_TEST = "sign flip over seeds"
SEED_WILCOXON = "signed-rank on seed means"


def _task_ids(frame: pd.DataFrame) -> pd.Series:
    ids = frame[TASK_KEY[0]].astype(str)
    for col in TASK_KEY[1:]:
        ids = ids + "|" + frame[col].astype(str)
    return ids


def _paired(trials: pd.DataFrame, reference: str, col: str) -> pd.DataFrame:
    """Long frame: one row per (arm, strategy != reference, pair) with value and ref value."""
    base = trials.loc[trials["strategy"] == reference, ["arm", *PAIR_KEY, col]]
    other = trials.loc[trials["strategy"] != reference, ["arm", "strategy", *PAIR_KEY, col]]
    return other.merge(base, on=["arm", *PAIR_KEY], suffixes=("", "_ref"))


def _wilson_cols(out: pd.DataFrame, k: str, n: str, prefix: str = "") -> None:
    out[f"{prefix}rate"] = out[k] / out[n].where(out[n] > 0)
    ci = [stats.wilson(int(a), int(b)) for a, b in zip(out[k], out[n], strict=True)]
    out[f"{prefix}ci_lo"], out[f"{prefix}ci_hi"] = [c[0] for c in ci], [c[1] for c in ci]


def success_table(trials: pd.DataFrame, planned: pd.DataFrame | None = None) -> pd.DataFrame:
    """The headline table, per cell: the plan's accounting (analysis.load.accounting: planned,
    finished, excluded and why, missing) and success per protocol (n = finished trials) and by
    intention to treat (itt_n = every planned trial; excluded or missing count as failures),
    each with a Wilson 95% CI."""
    keys = list(CELL)
    out = trials.groupby(keys).agg(n=("success", "size"), successes=("success", "sum")).reset_index()
    if planned is not None and not planned.empty:
        out = accounting.cell_counts(planned).merge(out, on=keys, how="left")
        out[["n", "successes"]] = out[["n", "successes"]].fillna(0).astype(int)
        out["n_excluded"] = out["excluded"]
        _wilson_cols(out, "itt_successes", "itt_n", "itt_")
    else:
        out["n_excluded"] = 0
    _wilson_cols(out, "successes", "n")
    return sort_cells(out)


def success_vs_reference(
    trials: pd.DataFrame,
    reference: str = "raw",
    seed: int = 0,
    alpha: float = 0.05,
    planned: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Paired success difference vs ``reference`` per arm, its task-bootstrap CI and test:
    exact McNemar when every task seed has one pair; with several (reps of a seed share its
    luck) the sign-flip test over seeds (``stats.mcnemar_clustered``; ``test`` names it).
    Beside it the power the study as run had (``analysis.power.pilot``): at Holm's first step
    alpha/K over the K comparisons, with the comparison's own discordance and seeds, the
    power to detect a difference of ``pilot.EFFECT`` and the MDE at ``pilot.TARGET`` power.
    With ``planned`` (analysis.load.accounting): the planned pairs, and how many were dropped and why."""
    p = _paired(trials, reference, "success")
    groups = list(p.groupby(["arm", "strategy"], sort=True))
    rows = []
    for (arm, strategy), g in groups:
        d = pilot.binary(g["success"], g["success_ref"], _task_ids(g))
        lo, hi = stats.paired_bootstrap_ci(g["success"], g["success_ref"], clusters=_task_ids(g), seed=seed)
        n, clustered = len(g), d.pairs.per_seed > 1
        test = stats.mcnemar_clustered(g["success"], g["success_ref"], _task_ids(g))
        rows.append(
            {
                "arm": arm,
                "strategy": strategy,
                "reference": reference,
                "n_pairs": n,
                "rate_ref": g["success_ref"].mean(),
                "rate": g["success"].mean(),
                "diff": (d.b - d.c) / n,
                "ci_lo": lo,
                "ci_hi": hi,
                "b": d.b,
                "c": d.c,
                "test": SEED_TEST if clustered else "exact McNemar",
                "x2": test["stat"],
                "p": test["p"] if clustered else stats.mcnemar_exact(d.b, d.c),
                "n_seeds": d.pairs.seeds,
                "psi": d.psi,
                "icc": d.pairs.icc,
                "icc_note": d.pairs.icc_note,
                "n_eff": d.pairs.n_eff,
                "comparisons": len(groups),
                **pilot.binary_power(d, alpha, len(groups)),
            }
        )
    out = (
        pd.DataFrame(rows) if rows else pd.DataFrame(columns=["arm", "strategy", "reference", "n_pairs", "p"])
    )
    if planned is not None and not planned.empty:  # a pair whose both sides were dropped still counts
        out = accounting.dropped_pairs(planned, reference).merge(out, on=["arm", "strategy"], how="outer")
        out["n_pairs"] = out["n_pairs"].fillna(0).astype(int)
        out["reference"], out["comparisons"] = reference, len(groups)
    out = sort_cells(out, ("arm", "strategy"))
    if not out.empty:
        out["p_holm"] = stats.holm(out["p"])
        out.attrs.update(effect=pilot.EFFECT, target=pilot.TARGET, alpha=alpha)
    return out


def continuous_vs_reference(
    trials: pd.DataFrame,
    reference: str = "raw",
    measures=tuple(CONTINUOUS),
    seed: int = 0,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Paired mean difference (task-bootstrap CI) and Wilcoxon signed-rank p per measure and arm,
    on the pairs, or on the per-seed mean differences when a seed has several reps; with the
    MDE at ``pilot.TARGET`` power (signed-rank via its ARE bound, alpha/K)."""
    rows: list[dict] = []
    for measure in measures:
        p = _paired(trials, reference, measure).dropna(subset=[measure, f"{measure}_ref"])
        start = len(rows)
        groups = list(p.groupby(["arm", "strategy"], sort=True))
        for (arm, strategy), g in groups:
            d = g[measure] - g[f"{measure}_ref"]
            c = pilot.continuous(d, _task_ids(g))
            lo, hi = stats.paired_bootstrap_ci(
                g[measure], g[f"{measure}_ref"], clusters=_task_ids(g), seed=seed
            )
            clustered = c.pairs.per_seed > 1
            units = pilot.seed_means(d, _task_ids(g)) if clustered else d.to_numpy()
            w, pval = stats.wilcoxon_paired(units, np.zeros(len(units)))
            rows.append(
                {
                    "measure": measure,
                    "arm": arm,
                    "strategy": strategy,
                    "reference": reference,
                    "test": SEED_WILCOXON if clustered else "signed-rank",
                    "n_pairs": len(g),
                    "mean_ref": g[f"{measure}_ref"].mean(),
                    "mean": g[measure].mean(),
                    "diff": d.mean(),
                    "ci_lo": lo,
                    "ci_hi": hi,
                    "median_diff": d.median(),
                    "wilcoxon_w": w,
                    "p": pval,
                    "sd_diff": c.sd,
                    "n_seeds": c.pairs.seeds,
                    "icc": c.pairs.icc,
                    "n_eff": c.pairs.n_eff,
                    "mde": pilot.continuous_mde(c, alpha, len(groups)),
                }
            )
        block = pd.DataFrame(rows[start:])
        if not block.empty:
            for i, adj in zip(range(start, len(rows)), stats.holm(block["p"]), strict=True):
                rows[i]["p_holm"] = adj
    if not rows:
        return pd.DataFrame()
    # Measures stay in the order asked for; cells in design order within each.
    out = pd.DataFrame(rows)
    return pd.concat(
        [sort_cells(out[out["measure"] == m], ("arm", "strategy")) for m in out["measure"].unique()],
        ignore_index=True,
    )


def within_objective_residuals(trials: pd.DataFrame, measure: str) -> pd.Series:
    """measure minus its mean over the reps of the same (cell, task): run-to-run spread only.

    Task seeds differ in size, so raw totals mix task-to-task spread into the
    variance; "equivalent objectives" means the same task under the same cell.
    """
    return trials[measure] - trials.groupby([*CELL, *TASK_KEY])[measure].transform("mean")


def token_variance(
    trials: pd.DataFrame, reference: str = "raw", measure: str = "tokens_input_total"
) -> pd.DataFrame:
    """Brown–Forsythe of run-to-run token spread, each strategy vs ``reference``, per arm."""
    reps = trials.groupby([*CELL, *TASK_KEY])[measure].transform("count")
    # Only objectives seen at least twice carry run-to-run spread; a lone rep is all zero.
    df = trials.assign(resid=within_objective_residuals(trials, measure)).loc[reps > 1]
    rows = []
    for arm, g in df.groupby("arm", sort=True):
        ref = g.loc[g["strategy"] == reference, "resid"].dropna()
        for strategy, s in g.loc[g["strategy"] != reference].groupby("strategy"):
            x = s["resid"].dropna()
            f, pval = stats.brown_forsythe(x, ref) if len(x) and len(ref) else (np.nan, np.nan)
            sd, sd_ref = x.std(ddof=1), ref.std(ddof=1)
            rows.append(
                {
                    "arm": arm,
                    "strategy": strategy,
                    "reference": reference,
                    "measure": measure,
                    "n": len(x),
                    "n_ref": len(ref),
                    "sd": sd,
                    "sd_ref": sd_ref,
                    "sd_ratio": sd / sd_ref if sd_ref else np.nan,
                    "bf_f": f,
                    "p": pval,
                }
            )
    out = sort_cells(pd.DataFrame(rows), ("arm", "strategy"))
    if not out.empty:
        out["p_holm"] = stats.holm(out["p"])
        out.attrs["note"] = "spread within (cell, task seed) across reps"
    elif not (reps > 1).any():
        out.attrs["note"] = "one rep per task: no run-to-run spread to test"
    return out


def interaction(
    trials: pd.DataFrame, reference: str = "raw", reference_arm: str = "baseline", seed: int = 0
) -> tuple[pd.DataFrame, dict]:
    """Strategy × arm interaction on success.

    Contrast per pair: (s − ref in arm) − (s − ref in reference arm), i.e. how much the
    arm changes a strategy's advantage. Global test: sign flips of whole tasks (exact
    when there are few tasks); a task-clustered logistic Wald test is reported beside
    it when the model is estimable.
    """
    wide = trials.pivot_table(index=list(PAIR_KEY), columns=list(CELL), values="success", aggfunc="first")
    strategies = sorted(s for s in trials["strategy"].unique() if s != reference)
    arms = sorted(a for a in trials["arm"].unique() if a != reference_arm)
    tasks = _task_ids(wide.index.to_frame(index=False))
    rows, sums, counts = [], [], []
    for s in strategies:
        for a in arms:
            cols = [(s, a), (reference, a), (s, reference_arm), (reference, reference_arm)]
            if not all(c in wide.columns for c in cols):
                continue
            did = (wide[cols[0]] - wide[cols[1]]) - (wide[cols[2]] - wide[cols[3]])
            ok = did.notna().to_numpy()
            lo, hi = stats.paired_bootstrap_ci(did[ok], np.zeros(ok.sum()), clusters=tasks[ok], seed=seed)
            rows.append(
                {
                    "strategy": s,
                    "arm": a,
                    "reference": reference,
                    "reference_arm": reference_arm,
                    "n_pairs": int(ok.sum()),
                    "did": did[ok].mean(),
                    "ci_lo": lo,
                    "ci_hi": hi,
                }
            )
            sums.append(did.fillna(0).groupby(tasks.to_numpy()).sum())
            counts.append(int(ok.sum()))
    table = sort_cells(pd.DataFrame(rows))
    result = {"perm_p": np.nan, "n_tasks": int(tasks.nunique()), "n_contrasts": len(rows)}
    if rows and min(counts) > 0:
        result["perm_p"] = stats.sign_flip_test(
            pd.concat(sums, axis=1).fillna(0).to_numpy(), counts, seed=seed
        )
    glm = stats.interaction_glm(
        trials["success"], trials["strategy"], trials["arm"], _task_ids(trials), reference, reference_arm
    )
    result.update({f"glm_{k}": v for k, v in glm.items() if k != "coef"})
    return table, result


def cache_vs_consistency(trials: pd.DataFrame, within: pd.DataFrame, across: pd.DataFrame) -> pd.DataFrame:
    """Per cell: cache-hit ratio beside outcome consistency and token spread for equivalent objectives.

    A high hit ratio says a prefix was reused, not that the run reached the same
    result (seed 002, §5): the table puts the two side by side.
    """
    g = trials.groupby(list(CELL))
    out = g.agg(
        n=("run_id", "size"),
        cache_hit_ratio=("cache_hit_ratio", "mean"),
        cache_hit_sd=("cache_hit_ratio", "std"),
    ).reset_index()
    w = within.set_index(list(CELL))
    out = out.join(w[["n_outcome_pairs", "outcome_mismatch", "n_pairs", "tree_mismatch"]], on=list(CELL))
    out["outcome_consistency"] = 1 - out["outcome_mismatch"]
    out["tree_consistency"] = 1 - out["tree_mismatch"]
    if not across.empty:
        agree = across.groupby(list(CELL)).agg(
            n_vs_baseline=("outcome_differs", "size"),
            agree_with_baseline=("outcome_differs", lambda s: 1 - s.mean()),
        )
        out = out.join(agree, on=list(CELL))
    per_task = trials.groupby([*CELL, *TASK_KEY])["tokens_input_total"].agg(["mean", "std", "size"])
    per_task = per_task[per_task["size"] > 1]
    cv = (per_task["std"] / per_task["mean"]).groupby(list(CELL)).agg(["mean", "size"])
    cv.columns = ["token_cv", "n_tasks_cv"]
    return sort_cells(out.join(cv, on=list(CELL)).drop(columns=["outcome_mismatch", "tree_mismatch"]))


def cost_per_success(trials: pd.DataFrame) -> pd.DataFrame:
    out = trials.groupby(list(CELL)).agg(
        n=("run_id", "size"),
        successes=("success", "sum"),
        cost_total=("cost_usd", "sum"),
        cost_mean=("cost_usd", "mean"),
    )
    out["cost_per_success"] = out["cost_total"] / out["successes"].where(out["successes"] > 0)
    return sort_cells(out.reset_index())


def excluded_summary(excluded: pd.DataFrame) -> pd.DataFrame:
    cols = ["excluded_because", "status", "failure_reason"]
    if excluded is None or excluded.empty:
        return pd.DataFrame(columns=[*cols, "n"])
    ex = excluded.assign(
        status=excluded["status"].fillna(""), failure_reason=excluded["failure_reason"].fillna("")
    )
    return ex.groupby(cols).size().rename("n").reset_index()


def failure_reasons(trials: pd.DataFrame) -> pd.DataFrame:
    """Among FINISHED trials that failed: how, per cell (n = failures in the cell)."""
    fails = trials.loc[trials["success"] == 0]
    if fails.empty:
        return pd.DataFrame(columns=[*CELL, "n_failures"])
    out = fails.groupby([*CELL, "failure_reason"]).size().unstack("failure_reason", fill_value=0)
    out.insert(0, "n_failures", out.sum(axis=1))
    return sort_cells(out.reset_index().rename_axis(columns=None))
