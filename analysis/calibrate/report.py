"""The fit report: observed against fitted, as a figure (fit.png) and a page (fit.md).

Each panel bins the observations of one mechanism and puts the observed rate (with a Wilson
interval) beside the mean probability the fitted parameters give the same observations, and
the prior's: where the two fitted curves part, the sim's functional form does not describe
the model, whatever the intervals say.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from analysis.calibrate import Calibration
from analysis.calibrate.likelihood import Design, best, probability
from analysis.calibrate.summaries import KINDS as RETENTION
from analysis.calibrate.write import GROUPS, comment
from analysis.stats.inference import wilson


def _binned(ax, x: np.ndarray, y: np.ndarray, fits: dict[str, np.ndarray], bins: int, xlabel: str) -> None:
    if len(x) == 0:
        ax.text(0.5, 0.5, "no observations", ha="center", transform=ax.transAxes)
        ax.set_xlabel(xlabel)
        return
    edges = np.unique(np.quantile(x, np.linspace(0, 1, bins + 1)))
    which = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, max(len(edges) - 2, 0))
    mids, obs, lows, highs, curves = [], [], [], [], {k: [] for k in fits}
    for b in range(max(len(edges) - 1, 1)):
        sel = which == b
        if not sel.any():
            continue
        n, k = int(sel.sum()), float(y[sel].sum())
        lo, hi = wilson(int(k), n)
        mids.append(float(np.mean(x[sel])))
        obs.append(k / n)
        lows.append(k / n - lo)
        highs.append(hi - k / n)
        for name, p in fits.items():
            curves[name].append(float(np.mean(p[sel])))
    ax.errorbar(mids, obs, yerr=[lows, highs], fmt="o", color="black", label="observed (Wilson 95%)")
    for (name, ys), style in zip(curves.items(), ("-", ":"), strict=False):
        ax.plot(mids, ys, style, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylim(-0.02, 1.02)


def _legend(ax: Any) -> None:
    """A legend where something was drawn; an empty panel says why it is empty (a real pilot can
    have no hand-off restatement or no timed call) instead of matplotlib warning on stderr."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no observations", ha="center", va="center", transform=ax.transAxes, color="gray")


def figure(c: Calibration, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    prior = {k: float(v) for k, v in c.prior.items()}
    fitted = {k: float(c.value(k)) for k in c.prior}
    for ax, kind, title in (
        (axes[0, 0], "handoff", "recall by context length"),
        (axes[0, 1], "handoff", "recall by position of the best occurrence"),
    ):
        sub = [o for o in c.obs if o.kind == kind and o.occ]
        d = Design.of(sub)
        far = np.array(
            [max(x for x, _ in o.occ) < min(o.fresh_from, o.length - prior["recent_tokens"]) for o in sub],
            dtype=bool,
        )
        if "length" in title:
            x = d.length
        else:
            x = np.array([max(o.occ)[0] / max(o.length, 1) for o in sub])
        fits = {"fitted": best(fitted, d), "prior": best(prior, d)}
        _binned(
            ax,
            x[far],
            d.y[far],
            {k: v[far] for k, v in fits.items()},
            6,
            "context tokens" if "length" in title else "relative position (0 = start)",
        )
        ax.set_title(f"{title}\nhand-off restatements, not just seen (n={int(far.sum())})", fontsize=10)
        ax.set_ylabel("share recalled")
    sub = [o for o in c.obs if o.kind == "tidy"]
    d = Design.of(sub)
    _binned(
        axes[0, 2],
        best(fitted, d),
        d.y,
        {"fitted": probability(fitted, d), "prior": probability(prior, d)},
        4,
        "protection q (fitted): best covering statement's recall",
    )
    axes[0, 2].set_title(f"tidy-ups taken (n={len(sub)})")
    ax = axes[1, 0]
    rates = [(k, [x.y for x in c.kept if x.kind == k]) for k in RETENTION]
    for i, (k, ys) in enumerate(rates):
        if ys:
            lo, hi = wilson(int(sum(ys)), len(ys))
            ax.errorbar(
                [i], [np.mean(ys)], yerr=[[np.mean(ys) - lo], [hi - np.mean(ys)]], fmt="o", color="black"
            )
        ax.plot([i], [prior[k]], "x", color="tab:orange")
    ax.set_xticks(
        range(len(rates)), [f"{k.replace('retain_', '')}\nn={len(ys)}" for k, ys in rates], fontsize=8
    )
    ax.set_title("summariser: share kept per kind (x = prior)")
    ax.set_ylim(-0.02, 1.02)
    ax = axes[1, 1]
    timed = [x for x in c.calls if x.ttft is not None]
    if timed:
        u = np.array([x.input + x.cache_write for x in timed], dtype=float)
        ax.scatter(u, [x.ttft for x in timed], s=6, alpha=0.4, label="observed")
        grid = np.linspace(0, u.max(), 50)
        cached = float(np.median([x.cache_read for x in timed]))
        for name, p, style in (("fitted", fitted, "-"), ("prior", prior, ":")):
            ax.plot(
                grid,
                p["latency_base_s"]
                + p["latency_s_per_uncached_token"] * grid
                + p["latency_s_per_cached_token"] * cached,
                style,
                label=f"{name} (median cached tokens)",
            )
    ax.set_xlabel("uncached prompt tokens")
    ax.set_ylabel("time to first token (s)")
    ax.set_title(f"latency (n={len(timed)} calls)")
    _legend(ax)
    ax = axes[1, 2]
    labels = []
    for i, kind in enumerate(("stale_replace", "stale_write")):
        sub = [o for o in c.obs if o.kind == kind]
        labels.append(f"{kind.replace('stale_', '')}\nn={len(sub)}")
        if sub:
            d = Design.of(sub)
            lo, hi = wilson(int(d.y.sum()), d.n)
            ax.errorbar(
                [i], [d.y.mean()], yerr=[[d.y.mean() - lo], [hi - d.y.mean()]], fmt="o", color="black"
            )
            ax.plot([i], [probability(fitted, d).mean()], "s", color="tab:blue")
            ax.plot([i], [probability(prior, d).mean()], "x", color="tab:orange")
    ax.set_xticks([0, 1], labels)
    ax.set_title("stale edits from memory (o observed, s fitted, x prior)")
    ax.set_ylim(-0.02, max(0.3, ax.get_ylim()[1]))
    _legend(axes[0, 0])
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def markdown(c: Calibration, conf: Path, command: str) -> str:
    fitted = [k for k, e in c.estimates.items() if e.low is not None]
    n = c.recall.n_obs if c.recall else {}
    lines = [
        f"# Calibration `sim_{c.name}`",
        "",
        f"`{command}`",
        "",
        f"- trials: {len(c.trials)} ({', '.join(sorted({str(t.get('strategy.name')) for t in c.trials}))} x "
        f"{', '.join(sorted({str(t.get('arm.name')) for t in c.trials}))}); model calls: {len(c.calls)}",
        f"- observations: {n.get('handoff', 0)} hand-off statements, {n.get('tidy', 0)} tidy-up chances, "
        f"{n.get('stale_replace', 0)} edits and {n.get('stale_write', 0)} whole-file writes of files in view, "
        f"{len(c.kept)} summarised facts"
        + (
            " (one per random draw: the trials were played by the sim, which shares draws across cells)"
            if c.deduped
            else ""
        ),
        f"- fitted: {len(fitted)} of {len(c.estimates)} parameters; the others keep their prior ({c.base}.yaml)",
        f"- at a bound of the sim's valid range (the logs wanted a value it refuses): "
        f"{', '.join(k for k, e in c.estimates.items() if 'at the lower bound' in e.source) or 'none'}",
        f"- config: `{conf}` (use it as `model=sim_{c.name}`)",
        "",
        "![observed vs fitted](fit.png)",
        "",
        "| parameter | value | interval, observations / why prior |",
        "|---|---|---|",
    ]
    for title, keys in GROUPS:
        lines.append(f"| **{title}** | | |")
        for k in keys:
            if k in c.estimates:
                lines.append(f"| {k} | {c.value(k):.4g} | {comment(k, c)} |")
    lines += [
        "",
        "Intervals are 95 % (profile likelihood for recall/temptation/stale edits, Clopper-Pearson "
        "for retention, OLS t for latency); a bracket is the range the logs cannot narrow. "
        "What they assume: docs/calibration.md.",
    ]
    return "\n".join(lines) + "\n"
