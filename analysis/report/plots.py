"""Report figures. Each is a standalone matplotlib Figure (no pyplot state, so it works
headless and inside a notebook alike) that reads on its own: title, axis units, and
the n behind every mark.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from analysis.diff.mismatch import TRIGGER_KINDS
from analysis.load import ARM_ORDER, STRATEGY_ORDER

_PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")
TRIGGER_COLORS = {
    "compaction": "#dd8452",
    "context_truncation": "#c44e52",
    "drift": "#4c72b0",
    "none": "#bbbbbb",
    "events missing": "#eeeeee",
}


def ordered(values, preferred) -> list[str]:
    values = [v for v in pd.unique(pd.Series(list(values))) if pd.notna(v)]
    return [v for v in preferred if v in values] + sorted(v for v in values if v not in preferred)


def colors(strategies) -> dict[str, str]:
    return {s: _PALETTE[i % len(_PALETTE)] for i, s in enumerate(ordered(strategies, STRATEGY_ORDER))}


def _figure(width: float, height: float) -> Figure:
    # Constrained layout keeps outside legends and two-line labels from overlapping,
    # without the second draw that bbox_inches="tight" costs at save time.
    return Figure(figsize=(width, height), layout="constrained")


def save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=100)
    return path


def _side_by_side(
    table: pd.DataFrame,
) -> tuple[Figure, Axes, list[str], float, list[tuple[str, str, pd.DataFrame, np.ndarray]]]:
    """A figure of one value per arm, strategies side by side within each arm: the figure, its
    axes, the arms, the width each strategy gets and, per strategy, (name, colour, its rows
    indexed by arm, their x positions)."""
    arms, strategies = ordered(table["arm"], ARM_ORDER), ordered(table["strategy"], STRATEGY_ORDER)
    col = colors(strategies)
    fig = _figure(max(8, 2.2 * len(arms) + 1.5), 4.6)
    ax = fig.subplots()
    width = 0.8 / max(1, len(strategies))
    groups = [
        (
            s,
            col[s],
            table[table["strategy"] == s].set_index("arm").reindex(arms),
            np.arange(len(arms)) - 0.4 + width * (j + 0.5),
        )
        for j, s in enumerate(strategies)
    ]
    return fig, ax, arms, width, groups


def success(table: pd.DataFrame, level: str = "strategy") -> Figure:
    """Success rate with Wilson 95% CIs, strategies side by side within each arm."""
    fig, ax, arms, width, groups = _side_by_side(table)
    for s, color, rows, x in groups:
        err = np.vstack([rows["rate"] - rows["ci_lo"], rows["ci_hi"] - rows["rate"]])
        ax.errorbar(x, rows["rate"], yerr=err, fmt="o", color=color, capsize=3, label=s)
        for xi, n in zip(x, rows["n"], strict=True):
            if pd.notna(n):
                ax.annotate(f"n={int(n)}", (xi, 0.02), ha="center", fontsize=7, color="#555555")
    ax.set_xticks(np.arange(len(arms)), arms)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("arm")
    ax.set_ylabel("success rate (share of trials)")
    ax.set_title(f"Task success by {level} and arm (dots: rate, bars: 95% Wilson CI)")
    fig.legend(title=level, loc="outside right upper", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return fig


def _band_panels(
    curves: pd.DataFrame,
    metrics: list[tuple[str, str]],
    title: str,
    legend: str = "upper left",
    level: str = "strategy",
) -> Figure:
    """Rows = metrics, columns = arms (shared y per row, so arms compare by eye);
    median per turn per strategy with an IQR band. n per strategy in each top panel."""
    arms = ordered(curves["arm"], ARM_ORDER)
    col = colors(curves["strategy"])
    fig = _figure(3.8 * len(arms), 3.0 * len(metrics) + 0.9)
    axes = fig.subplots(len(metrics), len(arms), squeeze=False, sharex=True, sharey="row")
    for i, (metric, label) in enumerate(metrics):
        for j, arm in enumerate(arms):
            ax = axes[i, j]
            sub = curves[curves["arm"] == arm]
            for s in ordered(sub["strategy"], STRATEGY_ORDER):
                d = sub[sub["strategy"] == s].dropna(subset=[metric])
                if d.empty:
                    continue
                q = d.groupby("turn")[metric].quantile([0.25, 0.5, 0.75]).unstack()
                ax.plot(q.index, q[0.5], color=col[s], lw=1.6, label=f"{s} (n={d['run_id'].nunique()})")
                ax.fill_between(q.index, q[0.25], q[0.75], color=col[s], alpha=0.18, lw=0)
            if i == 0:
                ax.set_title(f"arm: {arm}")
                # A fixed corner: loc="best" scans every vertex and costs ~50% of the render.
                ax.legend(fontsize=7, loc=legend, title=f"{level} (n trials)", title_fontsize=7)
            if i == len(metrics) - 1:
                ax.set_xlabel("turn")
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if j == 0:
                ax.set_ylabel(label)
            ax.grid(alpha=0.3)
    fig.suptitle(
        title + "\nline: median over trials, band: interquartile range (trials still running at that turn)"
    )
    return fig


def tokens(curves: pd.DataFrame, level: str = "strategy") -> Figure:
    return _band_panels(
        curves,
        [("prompt_tokens", "prompt tokens per turn"), ("cumulative_tokens", "cumulative tokens")],
        f"Token consumption per turn, by {level} and arm",
        level=level,
    )


def latency(curves: pd.DataFrame, level: str = "strategy") -> Figure:
    return _band_panels(
        curves,
        [("turn_latency_s", "latency per turn (s)")],
        f"Model-call latency per turn, by {level} and arm",
        level=level,
    )


def cache_hit(curves: pd.DataFrame, level: str = "strategy") -> Figure:
    fig = _band_panels(
        curves,
        [("cache_hit_ratio", "cache-hit ratio (cached / prompt tokens)")],
        f"Prompt-cache hit ratio per turn, by {level} and arm",
        legend="lower right",
        level=level,
    )
    for ax in fig.axes:
        ax.set_ylim(-0.02, 1.02)
    return fig


def cache_vs_consistency(table: pd.DataFrame, level: str = "strategy") -> Figure:
    """Per cell: cache-hit ratio against outcome consistency and token spread."""
    col = colors(table["strategy"])
    markers = dict(zip(ordered(table["arm"], ARM_ORDER), "osD^vP*X", strict=False))
    fig = _figure(12, 4.8)
    a1, a2 = fig.subplots(1, 2)
    ns = table["n_outcome_pairs"].dropna().unique()
    same_n = len(ns) == 1
    for _, r in table.iterrows():
        kw = {"color": col[r["strategy"]], "marker": markers[r["arm"]], "s": 55}
        a1.scatter(r["cache_hit_ratio"], r["outcome_consistency"], **kw)
        if pd.notna(r["n_outcome_pairs"]) and not same_n:
            a1.annotate(
                f"{int(r['n_outcome_pairs'])}",
                (r["cache_hit_ratio"], r["outcome_consistency"]),
                xytext=(4, 3),
                textcoords="offset points",
                fontsize=7,
                color="#555555",
            )
        a2.scatter(r["cache_hit_ratio"], r.get("token_cv", np.nan), **kw)
    a1.set_ylim(-0.05, 1.05)
    a1.set_xlim(-0.02, 1.02)
    a2.set_xlim(-0.02, 1.02)
    a1.set_xlabel("mean cache-hit ratio (cached / prompt tokens)")
    a2.set_xlabel("mean cache-hit ratio (cached / prompt tokens)")
    a1.set_ylabel("outcome consistency\n(share of rep pairs, same task, same outcome)")
    a2.set_ylabel("token spread for the same task\n(coefficient of variation across reps)")
    a1.set_title(
        f"Outcome consistency (n = {int(ns[0])} rep pairs per cell)"
        if same_n
        else "Outcome consistency (label: n rep pairs)"
    )
    n_cv = table["n_tasks_cv"].dropna().unique() if "n_tasks_cv" in table else []
    a2.set_title(
        "Token variance for equivalent objectives"
        + (f" (n = {int(n_cv[0])} tasks per cell)" if len(n_cv) == 1 else "")
    )
    for ax in (a1, a2):
        ax.grid(alpha=0.3)
    handles = [a1.scatter([], [], color=c, marker="o", label=s) for s, c in col.items()]
    handles += [a1.scatter([], [], color="#777777", marker=m, label=f"arm: {a}") for a, m in markers.items()]
    fig.legend(handles=handles, loc="outside right center", fontsize=8)
    fig.suptitle(f"Cache hits are not correctness: one point per {level} × arm cell")
    return fig


def cost_per_success(table: pd.DataFrame, level: str = "strategy") -> Figure:
    fig, ax, arms, width, groups = _side_by_side(table)
    for s, color, rows, x in groups:
        ax.bar(x, rows["cost_per_success"].fillna(0), width * 0.9, color=color, label=s)
        for xi, (v, k, n) in zip(
            x, zip(rows["cost_per_success"], rows["successes"], rows["n"], strict=True), strict=True
        ):
            if pd.notna(n):
                ax.annotate(
                    "no\nsuccess" if pd.isna(v) else f"{int(k)}/{int(n)}",
                    (xi, 0 if pd.isna(v) else v),
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    color="#333333",
                )
    ax.set_xticks(np.arange(len(arms)), arms)
    ax.set_xlabel("arm")
    ax.set_ylabel("cost per successful trial (USD)")
    ax.set_title("Cost per success = total cost / successes (label: successes/n trials)")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
    fig.legend(title=level, loc="outside right upper", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return fig


def mismatch_attribution(summary: pd.DataFrame, level: str = "strategy") -> Figure:
    """Outcome mismatches vs baseline, one panel per arm, stacked by what preceded the divergence."""
    if summary.empty:
        fig = _figure(7, 3)
        fig.subplots().text(0.5, 0.5, "no trials outside the reference arm", ha="center")
        return fig
    arms = ordered(summary["arm"], ARM_ORDER)
    fixed = ("arm", "strategy", "n_pairs", "mismatches")
    triggers = ordered([c for c in summary.columns if c not in fixed], tuple(TRIGGER_COLORS))
    extra = iter(_PALETTE[4:])
    tcol = {t: TRIGGER_COLORS.get(t) or next(extra, "#999999") for t in triggers}
    fig = _figure(max(8.0, 3.6 * len(arms) + 2), 4.4)
    axes = fig.subplots(1, len(arms), squeeze=False, sharey=True)[0]
    top = max(1, int(summary["mismatches"].max()))
    for ax, arm in zip(axes, arms, strict=True):
        sub = summary[summary["arm"] == arm].set_index("strategy")
        sub = sub.reindex(ordered(sub.index, STRATEGY_ORDER))
        x = np.arange(len(sub))
        bottom = np.zeros(len(sub))
        for t in triggers:
            v = sub[t].to_numpy(float)
            ax.bar(x, v, bottom=bottom, color=tcol[t], label=f"triggered by {t}" if t in TRIGGER_KINDS else t)
            bottom += v
        for xi, (m, n) in enumerate(zip(sub["mismatches"], sub["n_pairs"], strict=True)):
            ax.annotate(f"{int(m)}/{int(n)}", (xi, bottom[xi]), ha="center", va="bottom", fontsize=7)
        if not triggers:
            ax.text(0.5, 0.5, "no outcome mismatches", ha="center", transform=ax.transAxes, color="#555555")
        ax.set_xlim(-0.6, len(sub) - 0.4)
        ax.set_xticks(x, list(sub.index), fontsize=8)
        ax.set_title(f"arm: {arm}")
        ax.set_xlabel(level)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylim(0, top * 1.15 + 0.5)
    axes[0].yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylabel("trials whose outcome differs\nfrom the baseline twin (count)")
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=8, title="nearest preceding event")
    fig.suptitle(
        "Mismatch vs baseline by what preceded the first divergent turn\n"
        "(label: mismatched / n pairs on the same task seed and rep)"
    )
    return fig
