"""python -m analysis.power: explicit rates, a pilot study, and one-line errors (exit 2)."""

from __future__ import annotations

import io
import math
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.measures import tables
from analysis.power import __main__ as power_cli
from analysis.power import seeds as seedpower
from analysis.power import sizing as P

REPO = Path(P.__file__).resolve().parents[2]


def run(args, capsys):
    out = io.StringIO()
    rc = power_cli.main(args, out=out)
    return rc, out.getvalue(), capsys.readouterr().err


def test_explicit_binary_sizing_and_plan(capsys):
    rc, out, err = run(
        ["--p10", "0.25", "--p01", "0.10", "-K", "3", "--reps", "3", "--icc", "0.2", "--seeds", "40"], capsys
    )
    assert rc == 0 and not err
    alpha = 0.05 / 3
    n = P.mcnemar_n(0.25, 0.10, alpha)
    assert f"alpha/K = {alpha:.4g}" in out
    assert f"power: {n} exact" in out
    # 3 reps per seed: the report's test is the sign flip over seeds, so its simulated power
    # sizes the study; at this many seeds it agrees with exact McNemar at n_eff
    seeds = seedpower.seeds_for(3, 0.2, 0.25, 0.10, alpha)
    assert abs(seeds - math.ceil(n * 1.4 / 3)) <= 2
    assert f"{seeds} seeds x 3 = {3 * seeds} pairs" in out and "sign flip over seeds (power simulated" in out
    n_eff = 40 * 3 / 1.4
    assert f"n_eff = {n_eff:.1f} pairs, power {seedpower.power(40, 3, 0.2, 0.25, 0.10, alpha):.3f}" in out
    assert (
        abs(
            seedpower.power(40, 3, 0.2, 0.25, 0.10, alpha)
            - P.mcnemar_power(math.floor(n_eff), 0.25, 0.10, alpha)
        )
        < 0.05
    )


def test_psi_delta_is_the_same_question(capsys):
    _, a, _ = run(["--p10", "0.25", "--p01", "0.10"], capsys)
    _, b, _ = run(["--psi", "0.35", "--delta", "0.15"], capsys)
    assert a == b


def test_rates_size_with_independent_psi_and_show_the_shared_one(capsys):
    """The issue's figure: delta 0.1, 12 comparisons; psi 0.1 (shared draws) needs 113 pairs."""
    rc, out, err = run(["--rates", "0.6", "0.5", "-K", "12"], capsys)
    assert rc == 0 and not err
    indep = 0.6 * 0.5 + 0.5 * 0.4
    alpha = 0.05 / 12
    assert f"psi if independent = {indep:.3f}" in out
    assert f"psi if shared = |delta| = 0.100 would need only {P.mcnemar_n(0.1, 0.0, alpha)} pairs" in out
    assert f"power: {P.mcnemar_n(*P.split(indep, 0.1), alpha)} exact" in out
    assert P.mcnemar_n(0.1, 0.0, alpha) == 113 and P.mcnemar_n(*P.split(indep, 0.1), alpha) > 5 * 113
    assert run(["--rates", "0.5", "0.5"], capsys)[0] == 2
    assert run(["--rates", "0.6", "0.5", "--psi", "0.2"], capsys)[0] == 2


def test_explicit_continuous(capsys):
    rc, out, _ = run(["--sd-diff", "4000", "--diff", "1500", "-K", "12", "--seeds", "20"], capsys)
    assert rc == 0
    n = P.paired_n(1500, 4000, 0.05 / 12)
    assert f"independent pairs for 80% power: {n};" in out
    assert f"MDE at 80% power {P.paired_mde(20, 4000, 0.05 / 12):.4g}" in out


@pytest.mark.parametrize(
    "args, says",
    [
        ([], "nothing to size"),
        (["--p10", "0.3"], "--p10 and --p01"),
        (["--p10", "0.7", "--p01", "0.6"], "p10 + p01 <= 1"),
        (["--p10", "0.2", "--p01", "0.2"], "no difference"),
        (["--psi", "0.1", "--delta", "0.3"], "|delta| <= psi"),
        (["--psi", "0.3", "--delta", "0.1", "--reps", "3"], "needs --icc"),
        (["--psi", "0.3", "--delta", "0.1", "--alpha", "1.5"], "--alpha"),
        (["--psi", "0.3", "--delta", "0.1", "--icc", "2"], "--icc"),
        (["--psi", "0.3", "--delta", "0.1", "-K", "0"], "--comparisons"),
        (["--sd-diff", "10"], "both --sd-diff and --diff"),
        (["--sd-diff", "-1", "--diff", "2"], "--sd-diff"),
        (["--p10", "abc", "--p01", "0.1"], "invalid float"),
        (["--psi", "0.3", "--delta", "0.1", "tracking.uri=x"], "only apply with --pilot"),
        (["--bogus"], "unrecognized"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, says, capsys):
    rc, out, err = run(args, capsys)
    assert rc == 2 and not out
    assert err.count("\n") == 1 and err.startswith("analysis.power: ") and says in err, err


def test_pilot_reads_the_study_as_the_report_does(study, runs, capsys):
    rc, out, err = run(
        ["--pilot", study.study, f"tracking.uri={study.uri}", "--reps", "2", "--seeds", "30"], capsys
    )
    assert rc == 0, err
    vs = tables.success_vs_reference(runs.trials)
    assert f"Holm over K={len(vs)}" in out and "continuous (Wilcoxon" in out and "tokens_input_total" in out
    args = power_cli.parser().parse_args(["--pilot", study.study, "--reps", "2", "--seeds", "30"])
    binary, cont = power_cli.pilot_tables(runs.trials, args)
    assert binary[["arm", "strategy"]].equals(vs[["arm", "strategy"]])
    alpha = 0.05 / len(vs)
    for r, row in zip(vs.itertuples(), binary.to_dict("records"), strict=True):
        assert row["seeds x2 for ±0.1"] == seedpower.seeds_for(2, r.icc, *P.split(r.psi, 0.10), alpha)
        assert row["plan 30x2: power"] == f"{seedpower.power(30, 2, r.icc, *P.split(r.psi, 0.10), alpha):.2f}"
        assert f"{r.n_pairs} ({r.n_seeds})" == row["pilot pairs (seeds)"]
    assert len(cont) == 3 * len(vs)  # tokens, cost, latency
    for r, row in zip(vs.itertuples(), binary.to_dict("records"), strict=True):
        indep = r.rate * (1 - r.rate_ref) + r.rate_ref * (1 - r.rate)
        assert row["psi indep."] == f"{indep:.2f}" and row["psi"] == f"{r.psi:.2f}"
        assert row["(psi indep.)"] == seedpower.seeds_for(2, r.icc, *P.split(indep, 0.10), alpha)
    # the fixture's sim trials predate model.draws: shared draws, and the planner says so
    assert "the pilot's draws: shared" in out and "WARNING: this pilot's psi comes from shared draws" in out


def test_a_pilot_read_on_some_families_only(study, runs, capsys):
    family = runs.trials["task_family"].iloc[0]
    rc, out, err = run(["--pilot", study.study, f"tracking.uri={study.uri}", "--family", family], capsys)
    assert rc == 0, err
    n = int((runs.trials["task_family"] == family).sum())
    assert f"{n} finished trials at {study.uri} (families {family})" in out
    rc, _, err = run(["--pilot", study.study, f"tracking.uri={study.uri}", "--family", "nope"], capsys)
    assert rc == 2 and "no trials of family 'nope'; it ran" in err and family in err


def test_pilot_without_trials_or_reference(study, capsys):
    rc, _, err = run(["--pilot", "no-such-study", f"tracking.uri={study.uri}"], capsys)
    assert rc == 2 and "no finished trials" in err
    rc, _, err = run(["--pilot", study.study, f"tracking.uri={study.uri}", "--reference", "nope"], capsys)
    assert rc == 2 and "reference strategy 'nope'" in err
    rc, _, err = run(["--pilot", study.study, "colour=blue"], capsys)
    assert rc == 2 and "unknown argument 'colour=blue'" in err


def test_module_entry_point(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "analysis.power", "--psi", "0.3", "--delta", "0.1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert f"{P.mcnemar_n(0.2, 0.1)} exact" in res.stdout
    res = subprocess.run(
        [sys.executable, "-m", "analysis.power", "--psi", "2", "--delta", "0.1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1


def test_a_pilot_icc_that_could_not_be_estimated_is_printed_as_assumed():
    import pandas as pd

    # 4 seeds x 2 reps: ledger and raw never disagree in drift (no discordance: ICC assumed 1),
    # and in baseline ledger wins rep 0 of every seed (the ICC is estimated)
    rows = [
        {
            "study": "p",
            "model": "sim",
            "task_family": "f",
            "task_seed": k,
            "sensitivity_point": "",
            "rep": r,
            "strategy": s,
            "arm": arm,
            "success": int(arm == "baseline" and s == "ledger" and r == 0),
            "tokens_input_total": 1.0,
            "cost_usd": 1.0,
            "latency_s": 1.0,
        }
        for s in ("raw", "ledger")
        for arm in ("baseline", "drift")
        for k in range(4)
        for r in (0, 1)
    ]
    binary, _ = power_cli.pilot_tables(pd.DataFrame(rows), power_cli.parser().parse_args(["--pilot", "p"]))
    icc = binary.set_index("arm")["ICC"]
    assert icc["drift"] == "1.00 assumed" and not icc["baseline"].endswith("assumed")
    given = power_cli.pilot_tables(
        pd.DataFrame(rows), power_cli.parser().parse_args(["--pilot", "p", "--icc", "1"])
    )
    assert given[0].set_index("arm").loc["drift", "ICC"] == "1.00"  # the user's ICC is not an assumption
