"""The report's paired comparisons as display tables: each strategy against the reference in
every arm (binary success, then continuous measures), the strategy x arm interaction, the
spread of outcomes and the cost; each test, power and MDE cell names the n it rests on."""

from __future__ import annotations

import pandas as pd

from analysis import render
from analysis.power import pilot
from analysis.power import seeds as seedpower
from analysis.report.analyse import Analysis
from analysis.stats.inference import wilson


def dropped(v: pd.DataFrame) -> list[str]:
    return [
        f"{e} / {m} (of {n})"
        for e, m, n in zip(
            v["pairs_dropped_excluded"], v["pairs_dropped_missing"], v["n_pairs_planned"], strict=True
        )
    ]


def vs_reference(a: Analysis) -> pd.DataFrame:
    v = a.vs_reference
    v = v[v["n_pairs"] > 0] if not v.empty else v  # comparisons without a pair: _no_pairs
    if v.empty:
        return v
    return pd.DataFrame(
        {
            "arm": v["arm"],
            "strategy": v["strategy"],
            "n pairs": v["n_pairs"],
            **({"pairs dropped: excluded / missing": dropped(v)} if "n_pairs_planned" in v else {}),
            f"success {a.reference} → strategy": [
                f"{render.num(x)} → {render.num(y)}" for x, y in zip(v["rate_ref"], v["rate"], strict=True)
            ],
            "difference [95% CI]": [
                render.est_ci(r.diff, r.ci_lo, r.ci_hi, r.n_pairs) for r in v.itertuples()
            ],
            "b / c (discordant)": [f"{b} / {c}" for b, c in zip(v["b"], v["c"], strict=True)],
            "test (n)": [_test(r.test, r.n_pairs, r.n_seeds) for r in v.itertuples()],
            "p": v["p"].map(render.pval),
            "p (Holm)": v["p_holm"].map(render.pval),
            "discordant ψ": [
                render.rate_ci(r.psi, *wilson(r.b + r.c, r.n_pairs), r.n_pairs) for r in v.itertuples()
            ],
            "effective pairs": [_n_eff(r) for r in v.itertuples()],
            f"power for ±{render.num(pilot.EFFECT)}": [
                f"{r.power:.2f} ({_power_basis(r)})" for r in v.itertuples()
            ],
            f"MDE at {pilot.TARGET:.0%} power": [
                f"{_mde(r.mde)} ({_power_basis(r)})" for r in v.itertuples()
            ],
        }
    )


def _seeds(n: int, what: str = "seed") -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _test(test: str, pairs: int, seeds: int) -> str:
    return f"{test} ({_seeds(pairs, 'pair')}, {_seeds(seeds)})"


def _power_basis(r) -> str:
    """What a power figure rests on: effective pairs for exact McNemar, seeds for the
    sign flip over seeds (whose power is simulated)."""
    return f"n_eff={int(r.n_eff)}" if r.test == "exact McNemar" else f"{_seeds(r.n_seeds)}, simulated"


def _mde(x: float) -> str:
    return "none ≤ 1" if x == float("inf") else render.num(x)


def _mde_text(text: str, x: float) -> str:
    return "none (too few seeds)" if x == float("inf") else text


def _n_eff(r) -> str:
    """'31.2 of 40 (10 seeds, ICC 0.14)': the pairs discounted for reps sharing a task."""
    icc = render.num(r.icc) + (" assumed" if r.icc_note.startswith("assumed") else "")
    return f"{render.num(r.n_eff, 1)} of {r.n_pairs} ({_seeds(r.n_seeds)}, ICC {icc})"


_DIGITS = {"cost_usd": 4, "tokens_input_total": 0}


def continuous(a: Analysis) -> pd.DataFrame:
    c = a.continuous
    if c.empty:
        return c

    def f(measure, x):
        d = _DIGITS.get(measure, 2)
        return "–" if pd.isna(x) else (f"{x:,.0f}" if d == 0 else render.num(x, d))

    return pd.DataFrame(
        {
            "measure": c["measure"],
            "arm": c["arm"],
            "strategy": c["strategy"],
            "n pairs": c["n_pairs"],
            f"mean {a.reference}": [f(m, x) for m, x in zip(c["measure"], c["mean_ref"], strict=True)],
            "mean": [f(m, x) for m, x in zip(c["measure"], c["mean"], strict=True)],
            "mean difference [95% CI]": [
                f"{f(r.measure, r.diff)} [{f(r.measure, r.ci_lo)}, {f(r.measure, r.ci_hi)}] (n={r.n_pairs})"
                for r in c.itertuples()
            ],
            "median difference": [f(m, x) for m, x in zip(c["measure"], c["median_diff"], strict=True)],
            "test (n)": [_test(r.test, r.n_pairs, r.n_seeds) for r in c.itertuples()],
            "p": c["p"].map(render.pval),
            "p (Holm)": c["p_holm"].map(render.pval),
            f"MDE at {pilot.TARGET:.0%} power": [
                f"±{_mde_text(f(r.measure, r.mde), r.mde)} "
                + (
                    f"(n_eff={render.num(r.n_eff, 1)})"
                    if r.test == "signed-rank"
                    else f"({_seeds(r.n_seeds, 'seed mean')})"
                )
                for r in c.itertuples()
            ],
        }
    )


def interaction(a: Analysis) -> pd.DataFrame:
    i = a.interaction
    if i.empty:
        return i
    return pd.DataFrame(
        {
            "strategy": i["strategy"],
            "arm": i["arm"],
            "difference-in-differences [95% CI]": [
                render.est_ci(r.did, r.ci_lo, r.ci_hi, r.n_pairs) for r in i.itertuples()
            ],
        }
    )


def cost(a: Analysis) -> pd.DataFrame:
    c = a.cost
    return pd.DataFrame(
        {
            "strategy": c["strategy"],
            "arm": c["arm"],
            "n trials": c["n"],
            "successes": c["successes"],
            "total cost (USD)": c["cost_total"].map(lambda x: render.num(x, 4)),
            "mean cost per trial (USD)": c["cost_mean"].map(lambda x: render.num(x, 4)),
            "cost per success (USD)": c["cost_per_success"].map(
                lambda x: "no success" if pd.isna(x) else render.num(x, 4)
            ),
        }
    )


def variance(a: Analysis) -> pd.DataFrame:
    v = a.variance
    if v.empty:
        return v
    return pd.DataFrame(
        {
            "arm": v["arm"],
            "strategy": v["strategy"],
            "n (strategy / ref)": [f"{x} / {y}" for x, y in zip(v["n"], v["n_ref"], strict=True)],
            f"SD {a.reference}": v["sd_ref"].map(render.num),
            "SD": v["sd"].map(render.num),
            "SD ratio": v["sd_ratio"].map(render.num),
            "F (Brown–Forsythe)": v["bf_f"].map(render.num),
            "p": v["p"].map(render.pval),
            "p (Holm)": v["p_holm"].map(render.pval),
        }
    )


def power_text(a: Analysis) -> str:
    k = int(a.vs_reference["comparisons"].iloc[0]) if not a.vs_reference.empty else 0
    return (
        "Tests: with one pair per task seed, the exact McNemar test. With several (reps of a seed share its "
        "luck, so their pairs are not independent evidence), the sign-flip test over seeds: Durkalski's "
        "statistic (Σ d_k)² / Σ d_k², d_k = b − c within seed k, referred to its exact distribution when "
        "each seed's d_k is as likely to be negative as positive; it cannot reject anything with fewer than "
        f"{seedpower.min_seeds(0.05 / max(k, 1))} seeds at α/K = 0.05/{k}. Power the study as run had "
        f"(`python -m analysis.power`; docs/power.md): at Holm's first step α/K, with each comparison's own "
        "discordance ψ (raised to the effect when smaller). For exact McNemar, exactly, at n_eff = n / "
        "(1 + (m − 1)·ICC) pairs; for the sign flip, by simulating it with the comparison's seeds, pairs per "
        "seed and ICC (the within-seed correlation of a pair's signed discordance; assumed 1, i.e. seeds "
        f"only, when too few seeds to estimate it). MDE: the smallest difference detectable with "
        f"{pilot.TARGET:.0%} power."
    )
