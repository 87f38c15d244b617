"""The report's text, all of it: `document` writes every section in order, headline tables
first, every number beside its n (its tables in comparisons.py, its appendix in appendix.py)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pandas as pd

from analysis import render as R
from analysis.load import labels, sort_cells
from analysis.power import pilot
from analysis.report import appendix
from analysis.report import comparisons as C
from analysis.report.analyse import Analysis
from analysis.sensitivity.survive import section as sensitivity_section

if TYPE_CHECKING:
    from analysis.report.pages import Pages


def _headline(a: Analysis) -> pd.DataFrame:
    """Every planned trial of each cell accounted for, and success counted two ways."""
    s = a.success
    out = pd.DataFrame({"strategy": s["strategy"], "arm": s["arm"]})
    if "planned" not in s:  # nothing to account against: the finished trials only
        out["success per protocol [95% CI]"] = [R.rate_ci(r.rate, r.ci_lo, r.ci_hi, r.n) for r in s.itertuples()]
        return out
    out["planned"] = s["planned"]
    if s["unplanned"].any():
        out["unplanned"] = s["unplanned"]
    out["finished"] = s["finished"]
    out["excluded (why)"] = [f"{n} ({why})" if n else "0" for n, why in zip(s["excluded"], s["excluded_by_reason"],
                                                                            strict=True)]
    out["missing"] = s["missing"]
    out["success per protocol [95% CI]"] = [R.rate_ci(r.rate, r.ci_lo, r.ci_hi, r.n) for r in s.itertuples()]
    out["success, intention to treat [95% CI]"] = [R.rate_ci(r.itt_rate, r.itt_ci_lo, r.itt_ci_hi, r.itt_n)
                                                   for r in s.itertuples()]
    return out


def _plan_sentence(a: Analysis) -> str:
    s = a.success
    if "planned" not in s:
        return ""
    tot = {k: int(s[k].sum()) for k in ("planned", "unplanned", "finished", "excluded", "missing")}
    return (f"Of **{tot['planned']} planned trials**" + (f" (+{tot['unplanned']} unplanned)" if tot["unplanned"] else "")
            + f": {tot['finished']} finished, {tot['excluded']} excluded, {tot['missing']} missing (§1).")


def _no_pairs(a: Analysis) -> str:
    v = a.vs_reference
    gone = v[v["n_pairs"] == 0] if "n_pairs_planned" in v else v.iloc[0:0]
    return "".join(f"No pair left for `{r.strategy}` in `{r.arm}`: {r.n_pairs_planned} planned, "
                   f"{r.pairs_dropped_excluded} dropped (excluded), {r.pairs_dropped_missing} dropped (missing). "
                   for r in gone.itertuples())


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _span(values: pd.Series) -> str:
    lo, hi = int(values.min()), int(values.max())
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _share(k, n) -> str:
    return "– (n=0)" if pd.isna(n) or not n else f"{R.num(k / n)} ({int(k)}/{int(n)})"


def _hidden(t: pd.DataFrame) -> pd.DataFrame:
    """Success per task family with the visible checks only and with the hidden ones too
    (bench/trial/hidden_checks.py); trials recorded before hidden checks have no visible-only figure."""
    rows = []
    for family, g in t.groupby("task_family", sort=True):
        seen = g["success_visible"].dropna() if "success_visible" in g else pd.Series(dtype=float)
        rows.append({"family": family, "n": len(g),
                     "visible only": R.num(seen.mean()) + f" (n={len(seen)})" if len(seen) else "-",
                     "visible + hidden": R.num(g["success"].mean()),
                     "failed only hidden": int((seen > g.loc[seen.index, "success"]).sum())})
    return pd.DataFrame(rows)


def _mismatch(a: Analysis) -> pd.DataFrame:
    w = a.within
    return pd.DataFrame({
        "strategy": w["strategy"], "arm": w["arm"], "n trials": w["n_trials"], "n tasks": w["n_tasks"],
        "final tree differs (rep pairs)": [_share(k, n) for k, n in zip(w["tree_differs"], w["n_pairs"], strict=True)],
        "outcome differs (rep pairs)": [_share(k, n) for k, n in zip(w["outcome_differs"], w["n_outcome_pairs"],
                                                                      strict=True)],
    })


def _cache(a: Analysis) -> pd.DataFrame:
    c = a.cache
    out = pd.DataFrame({
        "strategy": c["strategy"], "arm": c["arm"], "n trials": c["n"],
        "cache-hit ratio (mean)": c["cache_hit_ratio"].map(R.num),
        "outcome consistency (rep pairs)": [f"{R.num(x)} (n={int(n)})" if pd.notna(n) and n else "– (n=0)"
                                            for x, n in zip(c["outcome_consistency"], c["n_outcome_pairs"], strict=True)],
        "token CV, same task (n tasks)": [f"{R.num(x)} (n={int(n)})" if pd.notna(n) else "– (n=0)"
                                          for x, n in zip(c["token_cv"], c["n_tasks_cv"], strict=True)],
    })
    if "agree_with_baseline" in c:
        out["same outcome as baseline"] = [f"{R.num(x)} (n={int(n)})" if pd.notna(n) else "–"
                                           for x, n in zip(c["agree_with_baseline"], c["n_vs_baseline"], strict=True)]
    return out


def _attribution_text(a: Analysis) -> str:
    s = a.attribution
    if s.empty:
        return "No trials outside the reference arm."
    total = int(s["mismatches"].sum())
    parts = [f"{int(s[k].sum())} triggered by {k}" for k in ("compaction", "context_truncation", "drift") if k in s]
    others = [c for c in s.columns if c not in ("strategy", "arm", "n_pairs", "mismatches", "compaction",
                                                "context_truncation", "drift")]
    parts += [f"{int(s[k].sum())} {k}" for k in others]
    return (f"{total} of {int(s['n_pairs'].sum())} trials outside `{a.reference_arm}` have a different outcome "
            f"from their `{a.reference_arm}` twin (same strategy, task seed and rep)"
            + (": " + ", ".join(parts) if total else "")
            + ". The divergence turn is the first turn whose model-visible tool calls (name, arguments) differ; "
            "its trigger is the nearest compaction, context truncation or drift event at or before that turn "
            "in either log (`mismatch_vs_baseline_pairs.csv` has the turn, the lag and which log).")


def _mismatch_rows(a: Analysis, pages: Pages | None) -> list[str]:
    """One row per trial whose outcome differs from its baseline twin, linked to its diff page."""
    p = a.across
    if p.empty or not p["outcome_differs"].any():
        return []
    m = p.loc[p["outcome_differs"]]
    links = pages.mismatch if pages else {}
    rows = pd.DataFrame({
        "strategy": m["strategy"], "arm": m["arm"], "task": m["task_family"] + " #" + m["task_seed"].astype(str),
        "rep": m["rep"], f"success (arm / {a.reference_arm})": [f"{int(x)} / {int(y)}" for x, y in
                                                               zip(m["success"], m["success_ref"], strict=True)],
        "failure reason": [r or s or "–" for r, s in zip(m["failure_reason"], m["failure_reason_ref"], strict=True)],
        "divergent turn": m["diverged_at"].map(lambda x: "–" if x is None or pd.isna(x) else str(int(x))),
        "trigger": m["trigger"].fillna("–"),
        "side by side": [f"[diff]({links[r]})" if r in links else "–" for r in m["run_id"]],
        "run": m["run_id"].map(lambda r: f"`{r[:12]}`"),
    })
    return ["Each mismatch, linked to its side-by-side page (also in the trial's MLflow run, Artifacts → "
            "`diff/vs_baseline.html`; `python -m analysis.diff RUN_ID` rebuilds it):", "",
            R.table(sort_cells(rows, ("arm", "strategy")))]


def _rep_rows(a: Analysis, pages: Pages | None) -> list[str]:
    if not pages or not pages.reps:
        return []
    t = a.runs.trials.set_index("run_id")
    rows = pd.DataFrame([{"strategy": t.at[x, "strategy"], "arm": t.at[x, "arm"],
                          "task": f"{t.at[x, 'task_family']} #{t.at[x, 'task_seed']}",
                          "reps": f"{t.at[x, 'rep']} vs {t.at[y, 'rep']}",
                          "success": f"{int(t.at[x, 'success'])} / {int(t.at[y, 'success'])}",
                          "side by side": f"[diff]({link})"} for (x, y), link in pages.reps.items()])
    rows = sort_cells(rows)
    return ["Consecutive reps whose final trees differ, side by side (`python -m analysis.diff RUN_ID --rep-twin`):", "",
            R.table(rows)]


def _banner(sample: labels.Sample) -> list[str]:
    html = labels.banner_html(sample)
    return [html, ""] if html else []


def _basis(trials: pd.DataFrame, sample: labels.Sample, cells: bool = True) -> list[str]:
    """The line under a headline table: n, seeds, reps, model, code version and sample; per
    cell as well when the cells rest on different ones."""
    per_cell = labels.cell_basis(trials)
    out = [f"Basis: {labels.basis(trials, sample)}.", ""]
    if cells and labels.varies(per_cell):
        out += ["The cells rest on different seeds, reps, models or code:", "", R.table(per_cell)]
    return out


def document(a: Analysis, figs: dict[str, str], title: str, pages: Pages | None = None) -> str:
    t, runs, inter = a.runs.trials, a.runs, a.interaction_result
    reps = t.groupby(["strategy", "arm", "task_family", "task_seed"]).size()
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    sample = labels.sample(t)
    out = [f"# {title}", "", *_banner(sample),
           f"Generated {now} from `{runs.tracking_uri}`, experiment `{runs.experiment}`. "
           f"**{len(t)} finished trials** analysed ({_count(t['strategy'].nunique(), 'strategy', 'strategies')} × "
           f"{_count(t['arm'].nunique(), 'arm')}, "
           f"{_count(t.groupby(['task_family', 'task_seed']).ngroups, 'task')}, {_span(reps)} rep(s) per "
           f"task and cell, model(s): {', '.join(map(str, sorted(t['model'].dropna().unique())))}); "
           f"**{len(runs.excluded)} excluded** (see §7). " + _plan_sentence(a), "",
           f"Comparisons are paired on (task seed, rep) against strategy `{a.reference}` within each arm; "
           "intervals are 95%, bootstrap intervals resample whole tasks, and Holm's correction runs over each "
           "family = one measure across all its (arm, strategy) comparisons.", ""]
    notes = a.notes + [f"study {k!r}: how its task seeds were chosen was not recorded (its trials predate the "
                       "study.sample tag), so whether they were selected is unknown" for k in sample.unrecorded]
    out += [f"> note: {n}" for n in notes] + ([""] if notes else [])
    out += ["## 1. Success", "",
            "Every planned trial, per cell: **finished** (a verdict: success or agent failure), **excluded** (it ran "
            "but has no verdict: infrastructure failure, interrupted, still running, superseded; why in brackets) or "
            "**missing** (it never ran). Success **per protocol** counts finished trials; by **intention to treat**, "
            "every planned trial, an excluded or missing one counting as a failure. [Wilson 95% CI] (n).", "",
            R.table(_headline(a)), *_basis(t, sample),
            f"![success]({figs['success']})", "",
            "### Visible-only against visible-plus-hidden success", "",
            "Each family's final acceptance includes hidden checks the agent never sees (tasks/common/hidden.py); "
            "*visible only* is the verdict without them (finished trials):", "", R.table(_hidden(t)), "",
            f"### Paired vs `{a.reference}` (b = strategy succeeded where the reference failed)", "",
            "A pair is a trial and its reference twin (same task seed, rep and arm); a pair is analysed when both "
            "finished, else dropped: because one side was excluded, else because one side is missing. The same "
            "pairs carry the paired tests of §2.", "",
            R.table(C.vs_reference(a)), *([_no_pairs(a), ""] if _no_pairs(a) else []), *_basis(t, sample, cells=False),
            C.power_text(a), "",
            "### Strategy × arm interaction", "",
            f"Sign-flip permutation test over {inter.get('n_tasks')} tasks of the {inter.get('n_contrasts')} "
            f"difference-in-differences contrasts: **p = {R.pval(inter.get('perm_p'))}**. "
            + (f"Logistic GLM (task-clustered SEs), joint Wald test of {inter.get('glm_df')} interaction terms: "
               f"χ² = {R.num(inter.get('glm_stat'))}, p = {R.pval(inter.get('glm_p'))} (n = {inter.get('glm_n')}, "
               f"{inter.get('glm_clusters')} clusters)." if not inter.get("glm_note") else
               f"Logistic GLM not reported: {inter.get('glm_note')}."), "",
            "Contrast = (strategy − reference in the arm) − (strategy − reference in baseline), in success-rate units:",
            "", R.table(C.interaction(a)),
            "## 2. Tokens, cost and latency", "",
            "Paired mean difference (strategy − reference) [task-bootstrap 95% CI] and Wilcoxon signed-rank test "
            "(on each seed's mean difference when a seed has several reps):", "",
            R.table(C.continuous(a)),
            f"MDE: the smallest mean shift the signed-rank test detects with {pilot.TARGET:.0%} power at Holm's "
            "first step of its measure's family, from the SD of the paired differences and the effective pairs "
            "(as above), or of the seed means and the number of seeds when a seed has several reps; the "
            "signed-rank test is taken at its worst-case efficiency, 0.864 of the t test's.", "",
            "Run-to-run token spread for equivalent objectives (input tokens minus the mean of the reps of the same "
            f"task in the same cell), Brown–Forsythe test vs `{a.reference}`"
            + (f" — {a.variance.attrs['note']}" if "note" in a.variance.attrs else "") + ":", "",
            R.table(C.variance(a)),
            f"![tokens]({figs['tokens_per_turn']})", "", f"![latency]({figs['latency_per_turn']})", "",
            "The harness's count of each request (messages and tool schemas) against the provider's, per model: "
            "error = (provider − harness) / provider; the budget follows the provider's count once known:", "",
            R.table(a.tokens) if not a.tokens.empty else "(no trial logged the harness's count)", "",
            "## 3. Mismatch", "", "### Within a cell (rep pairs on the same task seed)", "", R.table(_mismatch(a)),
            *_rep_rows(a, pages),
            f"### Against `{a.reference_arm}`", "", _attribution_text(a), "",
            R.table(a.attribution), f"![mismatch attribution]({figs['mismatch_attribution']})", "",
            *_mismatch_rows(a, pages), *([f"> note: {n}" for n in pages.notes] + [""] if pages and pages.notes
                                         else []),
            *([f"### Trajectory divergence from `{a.reference_arm}` (every pair, whatever the outcome)", "",
               "n_diverged of n_compared pairs whose tool calls part at some turn; median_turn is the first "
               "such turn; the remaining columns count the nearest preceding event:", "",
               R.table(a.divergence)] if not a.divergence.empty else []),
            "## 4. Cache hits are not correctness", "",
            "A cache hit proves a prefix was reused, not that the run reached the same result. Per cell:", "",
            R.table(_cache(a)), f"![cache vs consistency]({figs['cache_vs_consistency']})", "",
            f"![cache hit per turn]({figs['cache_hit_per_turn']})", "",
            "## 5. Cost per success", "",
            R.table(C.cost(a)),
            f"![cost per success]({figs['cost_per_success']})", "",
            "## 6. How finished trials failed", "", R.table(a.failures),
            "## 7. Excluded trials", "",
            "Not analysed: trials that did not finish (FAILED = harness error, KILLED = interrupted) and older "
            "duplicates of a re-run trial.", "", R.table(a.excluded),
            *appendix.section(a.instrument),
            "## Files", "", "Every table above (and the tidy trial table) is in `tables/*.csv`; figures in `figures/`.", ""]
    # "Which conclusions survive": only a sensitivity study has one (its own command prints it too).
    return "\n".join(out) + sensitivity_section(t)
