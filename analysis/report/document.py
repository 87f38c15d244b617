"""The report's text: `document` fills analysis/report/templates/index.md.j2, which holds every
section in order, headline tables first, every number beside its n (its tables in comparisons.py,
its appendix in appendix.py). A table's columns are its frame's: a new column is one more entry
in the frame built here or in comparisons.py."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pandas as pd

from analysis import render
from analysis.load import labels, sort_cells
from analysis.power import pilot
from analysis.report import appendix, comparisons
from analysis.report.analyse import Analysis
from analysis.sensitivity.survive import section as sensitivity_section

if TYPE_CHECKING:
    from analysis.report.pages import Pages


def _headline(a: Analysis) -> pd.DataFrame:
    """Every planned trial of each cell accounted for, and success counted two ways."""
    s = a.success
    out = pd.DataFrame({"strategy": s["strategy"], "arm": s["arm"]})
    if "planned" not in s:  # nothing to account against: the finished trials only
        out["success per protocol [95% CI]"] = [
            render.rate_ci(r.rate, r.ci_lo, r.ci_hi, r.n) for r in s.itertuples()
        ]
        return out
    out["planned"] = s["planned"]
    if s["unplanned"].any():
        out["unplanned"] = s["unplanned"]
    out["finished"] = s["finished"]
    out["excluded (why)"] = [
        f"{n} ({why})" if n else "0" for n, why in zip(s["excluded"], s["excluded_by_reason"], strict=True)
    ]
    out["missing"] = s["missing"]
    out["success per protocol [95% CI]"] = [
        render.rate_ci(r.rate, r.ci_lo, r.ci_hi, r.n) for r in s.itertuples()
    ]
    out["success, intention to treat [95% CI]"] = [
        render.rate_ci(r.itt_rate, r.itt_ci_lo, r.itt_ci_hi, r.itt_n) for r in s.itertuples()
    ]
    return out


def _plan_sentence(a: Analysis) -> str:
    s = a.success
    if "planned" not in s:
        return ""
    tot = {k: int(s[k].sum()) for k in ("planned", "unplanned", "finished", "excluded", "missing")}
    return (
        f"Of **{tot['planned']} planned trials**"
        + (f" (+{tot['unplanned']} unplanned)" if tot["unplanned"] else "")
        + f": {tot['finished']} finished, {tot['excluded']} excluded, {tot['missing']} missing (§1)."
    )


def _no_pairs(a: Analysis) -> str:
    v = a.vs_reference
    gone = v[v["n_pairs"] == 0] if "n_pairs_planned" in v else v.iloc[0:0]
    return "".join(
        f"No pair left for `{r.strategy}` in `{r.arm}`: {r.n_pairs_planned} planned, "
        f"{r.pairs_dropped_excluded} dropped (excluded), {r.pairs_dropped_missing} dropped (missing). "
        for r in gone.itertuples()
    )


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _span(values: pd.Series) -> str:
    lo, hi = int(values.min()), int(values.max())
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _share(k, n) -> str:
    return "– (n=0)" if pd.isna(n) or not n else f"{render.num(k / n)} ({int(k)}/{int(n)})"


def _mismatch(a: Analysis) -> pd.DataFrame:
    w = a.within
    return pd.DataFrame(
        {
            "strategy": w["strategy"],
            "arm": w["arm"],
            "n trials": w["n_trials"],
            "n tasks": w["n_tasks"],
            "final tree differs (rep pairs)": [
                _share(k, n) for k, n in zip(w["tree_differs"], w["n_pairs"], strict=True)
            ],
            "outcome differs (rep pairs)": [
                _share(k, n) for k, n in zip(w["outcome_differs"], w["n_outcome_pairs"], strict=True)
            ],
        }
    )


def _cache(a: Analysis) -> pd.DataFrame:
    c = a.cache
    out = pd.DataFrame(
        {
            "strategy": c["strategy"],
            "arm": c["arm"],
            "n trials": c["n"],
            "cache-hit ratio (mean)": c["cache_hit_ratio"].map(render.num),
            "outcome consistency (rep pairs)": [
                f"{render.num(x)} (n={int(n)})" if pd.notna(n) and n else "– (n=0)"
                for x, n in zip(c["outcome_consistency"], c["n_outcome_pairs"], strict=True)
            ],
            "token CV, same task (n tasks)": [
                f"{render.num(x)} (n={int(n)})" if pd.notna(n) else "– (n=0)"
                for x, n in zip(c["token_cv"], c["n_tasks_cv"], strict=True)
            ],
        }
    )
    if "agree_with_baseline" in c:
        out["same outcome as baseline"] = [
            f"{render.num(x)} (n={int(n)})" if pd.notna(n) else "–"
            for x, n in zip(c["agree_with_baseline"], c["n_vs_baseline"], strict=True)
        ]
    return out


def _attribution_text(a: Analysis) -> str:
    s = a.attribution
    if s.empty:
        return "No trials outside the reference arm."
    total = int(s["mismatches"].sum())
    parts = [
        f"{int(s[k].sum())} triggered by {k}" for k in ("compaction", "context_truncation", "drift") if k in s
    ]
    others = [
        c
        for c in s.columns
        if c not in ("strategy", "arm", "n_pairs", "mismatches", "compaction", "context_truncation", "drift")
    ]
    parts += [f"{int(s[k].sum())} {k}" for k in others]
    return (
        f"{total} of {int(s['n_pairs'].sum())} trials outside `{a.reference_arm}` have a different outcome "
        f"from their `{a.reference_arm}` twin (same strategy, task seed and rep)"
        + (": " + ", ".join(parts) if total else "")
        + ". The divergence turn is the first turn whose model-visible tool calls (name, arguments) differ; "
        "its trigger is the nearest compaction, context truncation or drift event at or before that turn "
        "in either log (`mismatch_vs_baseline_pairs.csv` has the turn, the lag and which log)."
    )


def _mismatch_rows(a: Analysis, pages: Pages | None) -> str:
    """One row per trial whose outcome differs from its baseline twin, linked to its diff page ("" when none)."""
    p = a.across
    if p.empty or not p["outcome_differs"].any():
        return ""
    m = p.loc[p["outcome_differs"]]
    links = pages.mismatch if pages else {}
    rows = pd.DataFrame(
        {
            "strategy": m["strategy"],
            "arm": m["arm"],
            "task": m["task_family"] + " #" + m["task_seed"].astype(str),
            "rep": m["rep"],
            f"success (arm / {a.reference_arm})": [
                f"{int(x)} / {int(y)}" for x, y in zip(m["success"], m["success_ref"], strict=True)
            ],
            "failure reason": [
                r or s or "–" for r, s in zip(m["failure_reason"], m["failure_reason_ref"], strict=True)
            ],
            "divergent turn": m["diverged_at"].map(lambda x: "–" if x is None or pd.isna(x) else str(int(x))),
            "trigger": m["trigger"].fillna("–"),
            "side by side": [f"[diff]({links[r]})" if r in links else "–" for r in m["run_id"]],
            "run": m["run_id"].map(lambda r: f"`{r[:12]}`"),
        }
    )
    return render.table(labels.headed_frame(sort_cells(rows, ("arm", "strategy")), a.level))


def _rep_rows(a: Analysis, pages: Pages | None) -> str:
    """Consecutive reps whose final trees differ, linked to their diff pages ("" when none)."""
    if not pages or not pages.reps:
        return ""
    t = a.runs.trials.set_index("run_id")
    rows = pd.DataFrame(
        [
            {
                "strategy": t.at[x, "strategy"],
                "arm": t.at[x, "arm"],
                "task": f"{t.at[x, 'task_family']} #{t.at[x, 'task_seed']}",
                "reps": f"{t.at[x, 'rep']} vs {t.at[y, 'rep']}",
                "success": f"{int(t.at[x, 'success'])} / {int(t.at[y, 'success'])}",
                "side by side": f"[diff]({link})",
            }
            for (x, y), link in pages.reps.items()
        ]
    )
    return render.table(labels.headed_frame(sort_cells(rows), a.level))


def _basis(trials: pd.DataFrame, sample: labels.Sample, cells: bool = True) -> list[str]:
    """The line under a headline table: n, seeds, reps, model, code version and sample; per
    cell as well when the cells rest on different ones."""
    per_cell = labels.cell_basis(trials)
    out = [f"Basis: {labels.basis(trials, sample)}.", ""]
    if cells and labels.varies(per_cell):
        out += [
            "The cells rest on different seeds, reps, models or code:",
            "",
            render.table(labels.headed_frame(per_cell, labels.level_heading(trials))),
        ]
    return out


def _hidden(t: pd.DataFrame) -> pd.DataFrame:
    """Success per task family with the visible checks only and with the hidden ones too
    (bench/trial/hidden_checks.py); trials recorded before hidden checks have no visible-only figure."""
    rows = []
    for family, g in t.groupby("task_family", sort=True):
        seen = g["success_visible"].dropna() if "success_visible" in g else pd.Series(dtype=float)
        rows.append(
            {
                "family": family,
                "n": len(g),
                "visible only": render.num(seen.mean()) + f" (n={len(seen)})" if len(seen) else "-",
                "visible + hidden": render.num(g["success"].mean()),
                "failed only hidden": int((seen > g.loc[seen.index, "success"]).sum()),
            }
        )
    return pd.DataFrame(rows)


def _interaction(inter: dict) -> dict:
    """The interaction tests' figures as the text prints them (None where a test did not run)."""
    return {
        "n_tasks": inter.get("n_tasks"),
        "n_contrasts": inter.get("n_contrasts"),
        "perm_p": render.pval(inter.get("perm_p")),
        "glm_note": inter.get("glm_note"),
        "glm_df": inter.get("glm_df"),
        "glm_stat": render.num(inter.get("glm_stat")),
        "glm_p": render.pval(inter.get("glm_p")),
        "glm_n": inter.get("glm_n"),
        "glm_clusters": inter.get("glm_clusters"),
    }


def document(a: Analysis, figs: dict[str, str], title: str, pages: Pages | None = None) -> str:
    """The report's markdown: its words are analysis/report/templates/index.md.j2, its figures here."""
    t, runs = a.runs.trials, a.runs
    reps = t.groupby(["strategy", "arm", "task_family", "task_seed"]).size()
    sample = labels.sample(t)
    notes = a.notes + [
        f"study {k!r}: how its task seeds were chosen was not recorded (its trials predate the "
        "study.sample tag), so whether they were selected is unknown"
        for k in sample.unrecorded
    ]
    level = a.level  # `strategy`, or `level` when an agent is one (analysis/load/labels.py)

    def table(frame: pd.DataFrame) -> str:
        return render.table(labels.headed_frame(frame, level))

    tables = {
        "headline": table(_headline(a)),
        "hidden": table(_hidden(t)),
        "vs_reference": table(comparisons.vs_reference(a)),
        "interaction": table(comparisons.interaction(a)),
        "continuous": table(comparisons.continuous(a)),
        "variance": table(comparisons.variance(a)),
        "tokens": table(a.tokens) if not a.tokens.empty else "(no trial logged the harness's count)",
        "mismatch": table(_mismatch(a)),
        "reps": _rep_rows(a, pages),
        "attribution": table(a.attribution),
        "mismatches": _mismatch_rows(a, pages),
        "divergence": table(a.divergence) if not a.divergence.empty else "",
        "cache": table(_cache(a)),
        "cost": table(comparisons.cost(a)),
        "failures": table(a.failures),
        "excluded": table(a.excluded),
    }
    text = (
        render.templates("analysis.report")
        .get_template("index.md.j2")
        .render(
            title=title,
            banner=labels.banner_html(sample),
            now=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            tracking_uri=runs.tracking_uri,
            experiment=runs.experiment,
            n_trials=len(t),
            strategies=_count(t["strategy"].nunique(), level, labels.headed("strategies", level)),
            level=level,
            arms=_count(t["arm"].nunique(), "arm"),
            tasks=_count(t.groupby(["task_family", "task_seed"]).ngroups, "task"),
            reps=_span(reps),
            models=", ".join(map(str, sorted(t["model"].dropna().unique()))),
            n_excluded=len(runs.excluded),
            plan_sentence=_plan_sentence(a),
            reference=a.reference,
            reference_arm=a.reference_arm,
            notes=notes,
            tables=tables,
            figs=figs,
            basis="\n".join(_basis(t, sample)),
            basis_overall="\n".join(_basis(t, sample, cells=False)),
            no_pairs=_no_pairs(a),
            power_text=comparisons.power_text(a),
            inter=_interaction(a.interaction_result),
            target_power=f"{pilot.TARGET:.0%}",
            variance_note=a.variance.attrs.get("note"),
            attribution_text=_attribution_text(a),
            page_notes=pages.notes if pages else [],
            appendix="\n".join(appendix.section(a.instrument, level)),
        )
    )
    # "Which conclusions survive": only a sensitivity study has one (its own command prints it too).
    return text + sensitivity_section(t)
