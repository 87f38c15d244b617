"""Replay-based fidelity: does the calibrated sim behave, cell by cell, like the runs it was fitted on?

    python -m analysis.calibrate.fidelity --plan  REAL... --model sim_NAME    # the commands that replay them
    python -m analysis.calibrate.fidelity         REAL... --sim SIM...         # the agreement report

The calibrated sim runs the same task families, seeds, reps, strategies and arms as the real
runs (the plan); each real trial is then paired with its replay and the report says, per cell
(strategy x arm): success in both, the share of pairs whose verdict agrees, turns and prompt
tokens (sim / real), and whether each pairwise strategy comparison has the same sign in the
sim as in the real runs. Its last section says how far the sim's conclusions carry: a fitted
parameter describes the runs it was fitted on; where the replay disagrees with them, a study
run on the sim measures the sim.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from collections.abc import Iterable
from itertools import combinations
from pathlib import Path

import pandas as pd

from analysis.calibrate.sources import Trial, load
from analysis.load import sort_cells
from analysis.render import emit, table
from analysis.stats.inference import mcnemar_exact, wilson
from ctxlog import events as ev

PAIR = ("strategy", "arm", "task_family", "task_seed", "rep")
# What else a replay must repeat of its real trial: the task's other size knobs and the limits
# (a real pilot with limits.max_turns=4 replayed under the default 240 measures the limits).
REPLAYED = (
    "task.size.filler",
    "task.size.callers",
    "limits.max_turns",
    "limits.max_turns_per_step",
    "limits.trial_timeout_s",
)


def frame(trials: Iterable[Trial]) -> pd.DataFrame:
    rows = []
    for t in trials:
        usage = [r.usage or {} for r in t.log.of(ev.ModelCall)]
        rows.append(
            {
                "strategy": t.get("strategy.name"),
                "arm": t.get("arm.name"),
                "task_family": t.get("task.family"),
                "task_seed": t.get("task.seed"),
                "rep": t.get("rep", 0),
                "steps": t.get("task.size.steps"),
                "success": int(t.end.status == "success"),
                "turns": int(t.end.turn or 0),
                "failure_reason": t.end.failure_reason,
                "prompt_tokens": sum(
                    u.get("input", 0) + u.get("cache_read", 0) + u.get("cache_write", 0) for u in usage
                ),
                "model": t.get("model.name"),
                "trial": t.name,
                **{k: t.get(k) for k in REPLAYED},
            }
        )
    return pd.DataFrame(rows)


def _plain(v: object) -> object:
    return int(v) if isinstance(v, float) and v.is_integer() else v


def plan(real: pd.DataFrame, model: str, study: str, extra: list[str], rep_shift: int = 0) -> list[list[str]]:
    """One `python -m bench -m` per (family, size): the product of its strategies, arms, seeds, reps
    (each rep + `rep_shift`)."""
    real = real.assign(rep=real["rep"] + rep_shift)
    out = []
    keys = [k for k in REPLAYED if k in real]
    for (family, steps, *knobs), g in real.groupby(["task_family", "steps", *keys], dropna=False):
        lists = {
            k: ",".join(str(v) for v in sorted(g[c].unique(), key=str))
            for k, c in (("strategy", "strategy"), ("arm", "arm"), ("task.seed", "task_seed"), ("rep", "rep"))
        }
        cmd = [
            sys.executable,
            "-m",
            "bench",
            "-m",
            f"model={model}",
            f"task={family}",
            *(f"{k}={v}" for k, v in lists.items()),
            f"study.name={study}",
            "hydra/launcher=ctxbench_joblib",
            "hydra/callbacks=study",
        ]
        if pd.notna(steps):
            cmd.append(f"task.size.steps={int(steps)}")
        cmd += [f"++{k}={_plain(v)}" for k, v in zip(keys, knobs, strict=True) if pd.notna(v)]
        out.append(cmd + extra)
    return out


def pairs(real: pd.DataFrame, sim: pd.DataFrame, rep_shift: int = 0) -> pd.DataFrame:
    return real.assign(rep=real["rep"] + rep_shift).merge(sim, on=list(PAIR), suffixes=("_real", "_sim"))


def cells(p: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (s, a), g in p.groupby(["strategy", "arm"]):
        n, kr, ks = len(g), int(g["success_real"].sum()), int(g["success_sim"].sum())
        lo, hi = wilson(kr, n)
        pooled = (kr + ks) / (2 * n)
        rows.append(
            {
                "strategy": s,
                "arm": a,
                "pairs": n,
                "success_real": kr / n,
                "success_sim": ks / n,
                "sim_in_real_ci": lo - 1e-12 <= ks / n <= hi + 1e-12,
                "verdicts_agree": float((g["success_real"] == g["success_sim"]).mean()),
                "agree_if_same": pooled**2 + (1 - pooled) ** 2,
                "turns_real": g["turns_real"].mean(),
                "turns_sim": g["turns_sim"].mean(),
                "tokens_ratio": float(
                    (
                        g["prompt_tokens_sim"] / g["prompt_tokens_real"].where(g["prompt_tokens_real"] > 0)
                    ).median()
                ),
            }
        )
    return sort_cells(pd.DataFrame(rows))


def comparisons(p: pd.DataFrame) -> pd.DataFrame:
    """Each pair of strategies within an arm: mean success difference, real vs sim, and its sign."""
    rows = []
    for arm, g in p.groupby("arm"):
        for a, b in combinations(sorted(g["strategy"].unique()), 2):
            key = ["task_family", "task_seed", "rep"]
            m = g[g.strategy == a].merge(g[g.strategy == b], on=key, suffixes=("_a", "_b"))
            if m.empty:
                continue
            ra, rb = m["success_real_a"], m["success_real_b"]
            real = float((ra - rb).mean())
            sim = float((m["success_sim_a"] - m["success_sim_b"]).mean())
            rows.append(
                {
                    "arm": arm,
                    "comparison": f"{a} - {b}",
                    "pairs": len(m),
                    "real": real,
                    "p_real": mcnemar_exact(
                        int(((ra == 1) & (rb == 0)).sum()), int(((ra == 0) & (rb == 1)).sum())
                    ),
                    "sim": sim,
                    "same_sign": (real > 0) == (sim > 0) and (real < 0) == (sim < 0),
                }
            )
    return pd.DataFrame(rows)


def _reasons(p: pd.DataFrame) -> str:
    """Why the pairs that both failed failed: a sim that agrees on the verdict but fails for another
    reason (the real model breaking a check at turn 2, the sim running out of turns) agrees by luck."""
    both = p[(p["success_real"] == 0) & (p["success_sim"] == 0)]
    if both.empty or "failure_reason_real" not in both:
        return "- no pair failed on both sides"

    def counts(col: str) -> str:
        return ", ".join(f"{k or '?'} {v}" for k, v in both[col].value_counts().sort_index().items())

    same = int((both["failure_reason_real"] == both["failure_reason_sim"]).sum())
    return (
        f"- of the {len(both)} pairs that failed on both sides, {same} failed for the same reason "
        f"(real: {counts('failure_reason_real')}; sim: {counts('failure_reason_sim')})"
    )


def report(real: pd.DataFrame, sim: pd.DataFrame, rep_shift: int = 0) -> str:
    p = pairs(real, sim, rep_shift)
    if p.empty:
        return "No real trial has a replay (same strategy, arm, task family, seed and rep): run the plan first.\n"
    c, k = cells(p), comparisons(p)
    agree = float((p["success_real"] == p["success_sim"]).mean())
    lines = [
        f"# Fidelity: {sim['model'].iloc[0]} replaying {len(p)} of {len(real)} trials of "
        f"{', '.join(sorted(real['model'].astype(str).unique()))}",
        "",
        "## Per cell",
        "",
        table(c),
        "",
    ]
    if not k.empty:
        lines += ["## Strategy comparisons (mean success difference over paired tasks)", "", table(k), ""]
    ratio = float(
        (p["prompt_tokens_sim"] / p["prompt_tokens_real"].where(p["prompt_tokens_real"] > 0)).median()
    )
    turns = float((p["turns_sim"] - p["turns_real"]).abs().mean())
    same = float((c["agree_if_same"] * c["pairs"]).sum() / c["pairs"].sum())
    lines += [
        "## How far the sim's conclusions carry",
        "",
        f"- verdicts agree in {agree:.0%} of {len(p)} paired trials; {same:.0%} would be expected if the sim "
        "were the real model with luck of its own (the cells' pooled success rates, `agree_if_same`): a "
        "trial's verdict is a draw, so only rates can agree more closely than that",
        f"- the sim's success rate lies inside the real runs' 95% Wilson interval in "
        f"{int(c['sim_in_real_ci'].sum())} of {len(c)} cells",
        f"- turns differ by {turns:.1f} on average; prompt tokens sim/real: median {ratio:.2f}",
        _reasons(p),
        (
            f"- strategy comparisons keep their sign in {int(k['same_sign'].sum())} of {len(k)}; of those "
            f"significant in the real runs (exact McNemar p < 0.05, uncorrected), "
            f"{int(k.loc[k['p_real'] < 0.05, 'same_sign'].sum())} of {int((k['p_real'] < 0.05).sum())}"
            if not k.empty
            else "- no strategy comparison (one strategy per arm)"
        ),
        "- Read a study run on this sim as evidence about the real model only where these agree: a "
        "cell or comparison that disagrees here is a property of the sim. With few pairs, agreement "
        "itself is uncertain (a cell of n pairs cannot show a difference much below 1/sqrt(n)).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m analysis.calibrate.fidelity",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "real", nargs="+", help="the runs the sim was fitted on: study names, run ids or event logs"
    )
    ap.add_argument("--sim", nargs="+", default=[], help="the calibrated sim's replays")
    ap.add_argument("--plan", action="store_true", help="print the commands that replay the real runs")
    ap.add_argument("--run", action="store_true", help="run those commands (python -m bench) and stop")
    ap.add_argument(
        "--model", default=None, help="the calibrated model config, e.g. sim_NAME (for --plan/--run)"
    )
    ap.add_argument("--study", default=None, help="study name of the replay (default fidelity_<model>)")
    ap.add_argument(
        "--rep-shift",
        type=int,
        default=0,
        help="replay rep r of the real runs as rep r+K: when the 'real' runs were themselves played by "
        "the sim (a demonstration), so the replay shares no random draws with them",
    )
    ap.add_argument("--tracking-uri", default=None)
    ap.add_argument("-o", "--out", type=Path, default=None, help="write the report here (markdown)")
    args, extra = ap.parse_known_args(argv)
    uri = args.tracking_uri
    if uri is None:
        from analysis.settings import defaults

        uri = str(defaults()["tracking.uri"])
    real = frame(load(args.real, uri))
    if args.plan or args.run:
        if not args.model:
            ap.error("--plan/--run need --model sim_NAME")
        cmds = plan(real, args.model, args.study or f"fidelity_{args.model}", extra, args.rep_shift)
        for cmd in cmds:
            print(" ".join(shlex.quote(x) for x in cmd))
            if args.run:
                subprocess.run(cmd, check=True)
        return 0
    if not args.sim:
        ap.error("give the replays with --sim (or --plan to print how to make them)")
    text = report(real, frame(load(args.sim, uri)), args.rep_shift)
    emit(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
