"""Parameter recovery: do the intervals hold the values that generated the logs?

    python -m analysis.calibrate.recovery TARGET... --splits 8 --out DIR

TARGET holds trials played by the simulated model with known parameters (every trial's
config.yaml names them; all trials must share them). The trials are split into disjoint sets
by task (family, seed) -- the sim's draws are keyed by seed and content, so two sets share no
luck -- each set is calibrated on its own, and for every fitted parameter the table counts how
often the interval holds the true value. At 95 % intervals, coverage should be near 0.95;
much lower means the intervals are too narrow (or the estimator biased), much higher that they
are wider than they need be. Writes recovery.md, recovery.json and recovery.png.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from analysis.calibrate import calibrate
from analysis.calibrate.sources import Trial, load

TIMING = (
    "latency_base_s",
    "latency_s_per_uncached_token",
    "latency_s_per_cached_token",
    "decode_s_per_token",
)


def truth(trials: list[Trial]) -> dict[str, float]:
    params = [t.get("model.params") for t in trials]
    if not params or any(not isinstance(p, dict) for p in params):
        raise SystemExit("recovery needs trials played by model=sim whose config.yaml names the parameters")
    first = params[0]
    if any(p != first for p in params):
        raise SystemExit("the trials were played with different sim parameters; recovery needs one true set")
    return {k: float(v) for k, v in first.items()}


def splits(trials: list[Trial], k: int) -> list[list[Trial]]:
    units: dict[tuple, list[Trial]] = {}
    for t in trials:
        units.setdefault(
            (str(t.get("task.family") or t.get("task.name")), int(t.get("task.seed", 0))), []
        ).append(t)
    keys = sorted(units)
    if len(keys) < k:
        raise SystemExit(f"{len(keys)} task (family, seed) units cannot make {k} disjoint splits")
    return [[t for key in keys[i::k] for t in units[key]] for i in range(k)]


def run(trials: list[Trial], k: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
    true = truth(trials)
    rows = []
    for i, part in enumerate(splits(trials, k)):
        cal = calibrate(part, f"recovery{i}")
        for name, e in cal.estimates.items():
            if e.low is None or e.high is None or e.source.startswith(("bracketed", "exact")):
                continue  # a bracket or an exact value is not a confidence interval
            rows.append(
                {
                    "split": i,
                    "param": name,
                    "true": true[name],
                    "value": e.value,
                    "low": e.low,
                    "high": e.high,
                    "n": e.n,
                    "covered": e.low - 1e-12 <= true[name] <= e.high + 1e-12,
                }
            )
    return true, rows


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| parameter | true | fits | covered | coverage | mean estimate | mean interval width | mean n |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r["param"] for r in rows):
        mine = [r for r in rows if r["param"] == name]
        cov = sum(r["covered"] for r in mine)
        mean = sum(r["value"] for r in mine) / len(mine)
        width = sum(r["high"] - r["low"] for r in mine) / len(mine)
        lines.append(
            f"| {name} | {mine[0]['true']:.4g} | {len(mine)} | {cov} | {cov / len(mine):.2f} | "
            f"{mean:.4g} | {width:.3g} | {sum(r['n'] for r in mine) / len(mine):.0f} |"
        )
    total = sum(r["covered"] for r in rows)
    lines += [
        "",
        f"All intervals: {total} of {len(rows)} hold the true value ({total / max(len(rows), 1):.2f}; "
        "nominal 0.95).",
    ]
    random = [r for r in rows if r["param"] not in TIMING]
    if len(random) < len(rows):
        hit = sum(r["covered"] for r in random)
        lines.append(
            f"Without the latency coefficients (the sim's timings lie on a line, so their intervals are "
            f"the log's rounding bound): {hit} of {len(random)} ({hit / max(len(random), 1):.2f})."
        )
    return lines


def figure(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["param"] for r in rows))
    cols = 4
    fig, axes = plt.subplots(
        (len(names) + cols - 1) // cols,
        cols,
        figsize=(16, 2.6 * ((len(names) + cols - 1) // cols)),
        squeeze=False,
    )
    for ax, name in zip(axes.flat, names, strict=False):
        mine = [r for r in rows if r["param"] == name]
        for r in mine:
            color = "tab:blue" if r["covered"] else "tab:red"
            ax.plot([r["low"], r["high"]], [r["split"], r["split"]], color=color)
            ax.plot([r["value"]], [r["split"]], "o", color=color, ms=3)
        ax.axvline(mine[0]["true"], color="black", ls="--")
        ax.set_title(f"{name}: {sum(r['covered'] for r in mine)}/{len(mine)} cover", fontsize=9)
        ax.set_yticks([])
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.suptitle("Parameter recovery: 95% intervals per disjoint split (dashed: true value; red: missed)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m analysis.calibrate.recovery",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--splits", type=int, default=8)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--tracking-uri", default="sqlite:///results/mlflow.db")
    args = ap.parse_args(argv)
    trials = load(args.targets, args.tracking_uri)
    true, rows = run(trials, args.splits)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "recovery.json").write_text(json.dumps({"true": true, "fits": rows}, indent=1) + "\n")
    figure(rows, args.out / "recovery.png")
    lines = [f"# Parameter recovery: {len(trials)} trials in {args.splits} disjoint splits", "", *table(rows)]
    (args.out / "recovery.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
