"""``python -m analysis.power``: size a study before it runs, or read a finished one as a pilot.

    python -m analysis.power --p10 0.25 --p01 0.10 --comparisons 3
    python -m analysis.power --psi 0.35 --delta 0.15 --reps 3 --icc 0.2 --seeds 40
    python -m analysis.power --sd-diff 4000 --diff 1500 --comparisons 12
    python -m analysis.power --pilot demo tracking.uri=sqlite:///results/mlflow.db --reps 2 --seeds 30
    python -m analysis.power --pilot after --family batch_writes -K 12   # one family of the pilot

Rates come from one of two sources: explicit flags, or a finished study (``--pilot``:
its observed discordance, within-seed correlation and SD of paired differences, per
comparison, exactly as the report computes them). A third source -- rates the
simulated model implies for a configuration, without running it -- belongs with the
sim's calibration (issue 14) and would feed the same explicit path; until it exists
there is deliberately no flag for it. The assumptions are in docs/power.md.

Bad input: one line naming the problem on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import math
import sys

import pandas as pd

from analysis.power import pilot, psi, sizing
from analysis.power import seeds as seedpower
from analysis.stats.inference import wilson

TRACKING_KEYS = {
    "tracking.uri": "tracking.uri",
    "tracking_uri": "tracking.uri",
    "tracking.experiment": "tracking.experiment",
    "experiment": "tracking.experiment",
}


class InputError(Exception):
    """A problem with what the user asked for: reported in one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints usage + message; one line is enough
        raise InputError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m analysis.power", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "overrides", nargs="*", metavar="key=value", help="tracking.uri=..., tracking.experiment=..."
    )
    rates = p.add_argument_group("binary outcome (success, exact McNemar)")
    rates.add_argument("--p10", type=float, help="P(strategy succeeds, reference fails) per pair")
    rates.add_argument("--p01", type=float, help="P(reference succeeds, strategy fails) per pair")
    rates.add_argument("--psi", type=float, help="total discordance p10 + p01 (with --delta)")
    rates.add_argument("--delta", type=float, help="difference in success rate p10 - p01 (with --psi)")
    rates.add_argument(
        "--rates",
        type=float,
        nargs=2,
        metavar=("P1", "P2"),
        help="success rates of strategy and reference: psi both ways (shared / independent draws)",
    )
    cont = p.add_argument_group("continuous measure (tokens, cost, latency; Wilcoxon signed-rank)")
    cont.add_argument("--sd-diff", type=float, help="SD of the paired differences")
    cont.add_argument("--diff", type=float, help="mean paired difference to detect (same units)")
    cont.add_argument(
        "--are",
        type=float,
        default=sizing.ARE_MIN,
        help=f"efficiency of signed-rank vs t (default {sizing.ARE_MIN}: worst case; 0.955 if normal)",
    )
    plan = p.add_argument_group("test and plan")
    plan.add_argument("--alpha", type=float, default=0.05, help="family-wise level (default 0.05)")
    plan.add_argument(
        "--comparisons",
        "-K",
        type=int,
        help="comparisons in the Holm family (default 1; with --pilot, the pilot's)",
    )
    plan.add_argument("--power", type=float, default=pilot.TARGET, help="target power (default 0.8)")
    plan.add_argument("--reps", type=int, help="reps per task seed (default 1; with --pilot, the pilot's)")
    plan.add_argument(
        "--icc",
        type=float,
        help="within-seed correlation of a pair's outcome difference, "
        "0..1 (needed with --reps > 1 unless --pilot estimates it)",
    )
    plan.add_argument("--seeds", type=int, help="a plan's number of task seeds: report its power and MDE")
    pil = p.add_argument_group("pilot study")
    pil.add_argument("--pilot", metavar="STUDY", help="read rates from this finished study in MLflow")
    pil.add_argument("--reference", default="raw", help="reference strategy (default raw)")
    pil.add_argument(
        "--family",
        action="append",
        metavar="FAMILY",
        help="read only this task family of the pilot (repeatable): two pilots set side by side "
        "on the families both ran",
    )
    pil.add_argument(
        "--effect", type=float, default=pilot.EFFECT, help="success difference to size for (0.10)"
    )
    pil.add_argument(
        "--rel-diff",
        type=float,
        default=0.10,
        help="continuous effect to size for, as a fraction of the reference mean (0.10)",
    )
    return p


def _validate(a: argparse.Namespace) -> None:
    checks = [
        (0 < a.alpha < 1, f"--alpha {a.alpha}: must be in (0, 1)"),
        (0 < a.power < 1, f"--power {a.power}: must be in (0, 1)"),
        (a.comparisons is None or a.comparisons >= 1, f"--comparisons {a.comparisons}: must be >= 1"),
        (a.reps is None or a.reps >= 1, f"--reps {a.reps}: must be >= 1"),
        (a.seeds is None or a.seeds >= 1, f"--seeds {a.seeds}: must be >= 1"),
        (a.icc is None or 0 <= a.icc <= 1, f"--icc {a.icc}: must be in [0, 1]"),
        (0 < a.are <= 1.5, f"--are {a.are}: must be in (0, 1.5]"),
        (0 < a.effect <= 1, f"--effect {a.effect}: must be in (0, 1]"),
        (a.rel_diff > 0, f"--rel-diff {a.rel_diff}: must be > 0"),
    ]
    for ok, message in checks:
        if not ok:
            raise InputError(message)
    if a.rates is not None:
        if not all(0 <= x <= 1 for x in a.rates) or a.rates[0] == a.rates[1]:
            raise InputError(f"--rates {a.rates[0]} {a.rates[1]}: two different success rates in [0, 1]")
        if any(x is not None for x in (a.p10, a.p01, a.psi, a.delta)):
            raise InputError("--rates sets psi and delta itself: give it without --p10/--p01/--psi/--delta")
        delta = a.rates[0] - a.rates[1]
        a.psi, a.delta = psi.independent(*a.rates), delta
    binary = [x is not None for x in (a.p10, a.p01, a.psi, a.delta)]
    if any(binary) and binary not in ([True, True, False, False], [False, False, True, True]):
        raise InputError("give the discordance as --p10 and --p01, or as --psi and --delta")
    if (a.sd_diff is None) != (a.diff is None):
        raise InputError("a continuous measure needs both --sd-diff and --diff")
    if a.sd_diff is not None and not (a.sd_diff > 0 and a.diff != 0):
        raise InputError(f"--sd-diff {a.sd_diff} must be > 0 and --diff {a.diff} non-zero")
    if not (any(binary) or a.sd_diff is not None or a.pilot):
        raise InputError(
            "nothing to size: give --p10/--p01, --psi/--delta, --sd-diff/--diff or --pilot STUDY"
        )
    if a.pilot is None and (a.reps or 1) > 1 and a.icc is None:
        raise InputError(
            f"--reps {a.reps} needs --icc: how alike are a seed's reps (0: like new seeds, "
            "1: they add nothing)? Estimate it from a pilot with --pilot STUDY"
        )
    if a.overrides and not a.pilot:
        raise InputError(f"{a.overrides[0]!r}: key=value overrides only apply with --pilot")


def _binary_rates(a: argparse.Namespace) -> tuple[float, float]:
    if a.p10 is not None:
        p10, p01 = a.p10, a.p01
    else:
        if not (0 <= a.psi <= 1 and abs(a.delta) <= a.psi):
            raise InputError(f"--psi {a.psi}, --delta {a.delta}: need 0 <= |delta| <= psi <= 1")
        p10, p01 = sizing.split(a.psi, a.delta)
    if not (0 <= p10 <= 1 and 0 <= p01 <= 1 and p10 + p01 <= 1):
        raise InputError(f"--p10 {p10}, --p01 {p01}: each in [0, 1] and p10 + p01 <= 1")
    if p10 == p01:
        raise InputError(f"--p10 = --p01 = {p10}: no difference to detect")
    return p10, p01


def _seeds_for(n_pairs: float, reps: int, icc: float, alpha: float = 1.0) -> int:
    """Seeds whose effective pairs reach n_pairs: ceil(n * DE / reps); with several reps, at
    least the seeds a test over seeds needs to reach alpha at all (``seedpower.min_seeds``)."""
    seeds = math.ceil(n_pairs * sizing.design_effect(reps, icc) / reps - 1e-9)
    return max(seeds, seedpower.min_seeds(alpha)) if reps > 1 else seeds


def explicit_binary(a: argparse.Namespace, out) -> None:
    if a.rates is not None:  # independent draws first (a real model); then what shared draws would give
        k = a.comparisons or 1
        n_sh = sizing.mcnemar_n(
            *sizing.split(psi.shared(a.delta), a.delta), sizing.holm_alpha(a.alpha, k), a.power
        )
        print(
            f"success rates {a.rates[0]:.3f} vs {a.rates[1]:.3f}: psi if independent = {a.psi:.3f} "
            f"(sized below); psi if shared = |delta| = {abs(a.delta):.3f} would need only {n_sh} pairs",
            file=out,
        )
    p10, p01 = _binary_rates(a)
    k, reps, icc = a.comparisons or 1, a.reps or 1, a.icc if a.icc is not None else 0.0
    alpha = sizing.holm_alpha(a.alpha, k)
    n = sizing.mcnemar_n(p10, p01, alpha, a.power)
    print(
        f"exact McNemar, two-sided, Holm over K={k}: sized at its first step, alpha/K = {alpha:.4g}", file=out
    )
    print(
        f"discordance p10 = {p10:.3f}, p01 = {p01:.3f} (psi = {p10 + p01:.3f}, delta = {p10 - p01:+.3f})",
        file=out,
    )
    print(
        f"independent pairs for {a.power:.0%} power: {n} exact (Connor approximation "
        f"{sizing.mcnemar_n_approx(p10, p01, alpha, a.power):.1f}, conditional approximation "
        f"{sizing.mcnemar_n_approx(p10, p01, alpha, a.power, 'conditional'):.1f})",
        file=out,
    )
    seeds = (
        _seeds_for(n, reps, icc) if reps == 1 else seedpower.seeds_for(reps, icc, p10, p01, alpha, a.power)
    )
    test = (
        ""
        if reps == 1
        else (
            f" for the sign flip over seeds (power simulated; it needs at least "
            f"{seedpower.min_seeds(alpha)} seeds)"
        )
    )
    print(
        f"task seeds at {reps} rep(s) per seed, ICC {icc:.2f} (design effect {sizing.design_effect(reps, icc):.2f})"
        f"{test}: {seeds} seeds x {reps} = {seeds * reps} pairs",
        file=out,
    )
    if a.seeds:
        n_eff = sizing.effective_pairs(a.seeds, reps, icc)
        power, mde = (
            (
                sizing.mcnemar_power(math.floor(n_eff), p10, p01, alpha),
                sizing.mcnemar_mde(n_eff, p10 + p01, alpha, a.power),
            )
            if reps == 1
            else (
                seedpower.power(a.seeds, reps, icc, p10, p01, alpha),
                seedpower.mde(a.seeds, reps, icc, p10 + p01, alpha, a.power),
            )
        )
        print(
            f"plan {a.seeds} seeds x {reps} rep(s): n_eff = {n_eff:.1f} pairs, power {power:.3f} (Connor at n_eff "
            f"{sizing.mcnemar_power_approx(math.floor(n_eff), p10, p01, alpha):.3f}); MDE at {a.power:.0%} power "
            f"{mde:.3f} at psi {p10 + p01:.3f}",
            file=out,
        )


def explicit_continuous(a: argparse.Namespace, out) -> None:
    k, reps, icc = a.comparisons or 1, a.reps or 1, a.icc if a.icc is not None else 0.0
    alpha = sizing.holm_alpha(a.alpha, k)
    n = sizing.paired_n(a.diff, a.sd_diff, alpha, a.power, a.are)
    print(
        f"Wilcoxon signed-rank, two-sided, ARE {a.are:.3f}, Holm over K={k}: alpha/K = {alpha:.4g}", file=out
    )
    print(
        f"mean difference {a.diff:g}, SD of differences {a.sd_diff:g} (d = {abs(a.diff) / a.sd_diff:.3f})",
        file=out,
    )
    seeds = _seeds_for(n, reps, icc, alpha)
    print(
        f"independent pairs for {a.power:.0%} power: {n}; at {reps} rep(s) per seed, ICC {icc:.2f}: "
        f"{seeds} seeds x {reps} = {seeds * reps} pairs",
        file=out,
    )
    if a.seeds:
        n_eff = sizing.effective_pairs(a.seeds, reps, icc)
        print(
            f"plan {a.seeds} seeds x {reps} rep(s): n_eff = {n_eff:.1f}, power "
            f"{sizing.paired_power(n_eff, a.diff, a.sd_diff, alpha, a.are):.3f}; MDE at {a.power:.0%} power "
            f"{sizing.paired_mde(n_eff, a.sd_diff, alpha, a.power, a.are):.4g}",
            file=out,
        )


def _tracking(overrides: list[str]) -> dict[str, str]:
    from analysis.settings import defaults

    cfg = {k: v for k, v in defaults().items() if k.startswith("tracking.") and v}
    for item in overrides:
        key, sep, value = item.lstrip("+").partition("=")
        if not sep or key not in TRACKING_KEYS:
            raise InputError(f"unknown argument {item!r}; use tracking.uri=... or tracking.experiment=...")
        cfg[TRACKING_KEYS[key]] = value
    return cfg


def pilot_tables(trials: pd.DataFrame, a: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per comparison of the pilot: what it saw, and what the planned study needs."""
    from analysis.measures import tables

    vs = tables.success_vs_reference(trials, a.reference)
    cont = tables.continuous_vs_reference(trials, a.reference)
    rows = []
    k = a.comparisons or max(len(vs), 1)
    alpha = sizing.holm_alpha(a.alpha, k)
    for r in vs.itertuples():
        reps = a.reps or max(1, round(r.n_pairs / r.n_seeds))
        icc = a.icc if a.icc is not None else r.icc
        need = [
            _seeds_for(sizing.mcnemar_n(*sizing.split(x, a.effect), alpha, a.power), reps, icc)
            if reps == 1
            else seedpower.seeds_for(reps, icc, *sizing.split(x, a.effect), alpha, a.power)
            for x in (r.psi, wilson(r.b + r.c, r.n_pairs)[1], psi.independent(r.rate, r.rate_ref))
        ]
        seeds = a.seeds or r.n_seeds
        n_eff = math.floor(sizing.effective_pairs(seeds, reps, icc))
        power, mde = (
            (
                sizing.mcnemar_power(n_eff, *sizing.split(r.psi, a.effect), alpha),
                sizing.mcnemar_mde(n_eff, r.psi, alpha, a.power),
            )
            if reps == 1
            else (
                seedpower.power(seeds, reps, icc, *sizing.split(r.psi, a.effect), alpha),
                seedpower.mde(seeds, reps, icc, r.psi, alpha, a.power),
            )
        )
        rows.append(
            {
                "arm": r.arm,
                "strategy": r.strategy,
                "pilot pairs (seeds)": f"{r.n_pairs} ({r.n_seeds})",
                "p10 / p01": f"{r.b / r.n_pairs:.2f} / {r.c / r.n_pairs:.2f}",
                "ICC": pilot.icc_label(icc, r.icc_note if a.icc is None else "given"),
                "psi": f"{r.psi:.2f}",
                "psi indep.": f"{psi.independent(r.rate, r.rate_ref):.2f}",
                f"seeds x{reps} for ±{a.effect:g}": need[0],
                "(psi at upper 95%)": need[1],
                "(psi indep.)": need[2],
                f"plan {seeds}x{reps}: power": f"{power:.2f}",
                "plan MDE": f"{mde:.3f}",
            }
        )
    crow = []
    for measure, block in cont.groupby("measure", sort=False) if not cont.empty else []:
        kc = a.comparisons or len(block)
        for r in block.itertuples():
            reps = a.reps or max(1, round(r.n_pairs / r.n_seeds))
            icc = a.icc if a.icc is not None else r.icc
            diff = a.rel_diff * abs(r.mean_ref)
            ok = r.sd_diff > 0 and diff > 0
            n = (
                sizing.paired_n(diff, r.sd_diff, sizing.holm_alpha(a.alpha, kc), a.power, a.are)
                if ok
                else math.nan
            )
            seeds = a.seeds or r.n_seeds
            mde = sizing.paired_mde(
                sizing.effective_pairs(seeds, reps, icc),
                r.sd_diff,
                sizing.holm_alpha(a.alpha, kc),
                a.power,
                a.are,
            )
            crow.append(
                {
                    "measure": measure,
                    "arm": r.arm,
                    "strategy": r.strategy,
                    "pilot pairs (seeds)": f"{r.n_pairs} ({r.n_seeds})",
                    "SD of diff": f"{r.sd_diff:.4g}",
                    "ICC": f"{icc:.2f}",
                    f"effect ({a.rel_diff:.0%} of ref)": f"{diff:.4g}",
                    f"seeds x{reps}": _seeds_for(n, reps, icc, sizing.holm_alpha(a.alpha, kc)) if ok else "–",
                    f"plan {seeds}x{reps}: MDE": f"{mde:.4g}",
                }
            )
    return pd.DataFrame(rows), pd.DataFrame(crow)


def from_pilot(a: argparse.Namespace, out) -> None:
    from analysis.load import labels, load_runs

    cfg = _tracking(a.overrides)
    runs = load_runs(cfg["tracking.uri"], cfg.get("tracking.experiment", "ctxbench"), a.pilot, curves=False)
    if runs.empty:
        raise InputError(
            f"pilot study {a.pilot!r}: no finished trials at {cfg['tracking.uri']} "
            f"({'; '.join(runs.notes) or 'nothing found'})"
        )
    trials = runs.trials
    if a.family:
        ran = set(trials["task_family"])
        if missing := [f for f in a.family if f not in ran]:
            raise InputError(
                f"pilot study {a.pilot!r} has no trials of family {missing[0]!r}; it ran "
                f"{', '.join(sorted(ran))}"
            )
        trials = trials[trials["task_family"].isin(a.family)]
    level = labels.level_heading(trials)  # `level` when an agent is one (analysis/load/labels.py)
    if a.reference not in set(trials["strategy"]):
        raise InputError(f"pilot study {a.pilot!r} has no trials of reference {level} {a.reference!r}")
    binary, cont = (labels.headed_frame(f, level) for f in pilot_tables(trials, a))
    mode = psi.draws(trials)
    k = a.comparisons or len(binary)
    print(
        f"pilot {a.pilot!r}: {len(trials)} finished trials at {cfg['tracking.uri']}"
        + (f" (families {', '.join(a.family)})" if a.family else "")
        + "; reference "
        f"{a.reference!r}; Holm over K={k}, sized at alpha/K = {sizing.holm_alpha(a.alpha, k):.4g}, "
        f"target power {a.power:.0%}",
        file=out,
    )
    print(
        f"\nsuccess (exact McNemar; with several reps per seed, the sign flip over seeds, simulated); the pilot's "
        f"draws: {mode}; 'psi indep.' = p1(1-p2) + p2(1-p1) at the pilot's rates:",
        file=out,
    )
    print(binary.to_string(index=False), file=out)
    if mode != "independent":
        print(psi.WARNING, file=out)
    if not cont.empty:
        print(f"\ncontinuous (Wilcoxon signed-rank, ARE {a.are:.3f}):", file=out)
        print(cont.to_string(index=False), file=out)


def main(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    try:
        a = parser().parse_args(sys.argv[1:] if argv is None else argv)
        _validate(a)
        if a.pilot:
            from_pilot(a, out)
            return 0
        if a.p10 is not None or a.psi is not None:
            explicit_binary(a, out)
        if a.sd_diff is not None:
            explicit_continuous(a, out)
    except (InputError, ValueError) as exc:
        print(f"analysis.power: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
