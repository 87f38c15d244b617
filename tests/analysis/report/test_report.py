"""The report: files, n beside every number, the MLflow mirror, the no-runs exit."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis.power import seeds as seedpower
from analysis.report import __main__ as cli
from analysis.report import build as report
from analysis.stats import inference as stats

REPO = Path(report.__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rep(study, runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    r = report.generate(study.uri, study.experiment, study.study, out, runs=runs)
    assert r is not None
    return r


def test_report_files(rep):
    out = rep.out_dir
    assert (out / "index.md").is_file() and (out / "index.html").is_file()
    pngs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert pngs == sorted(f"{k}.png" for k in rep.figures)
    assert len(pngs) == 7
    for p in (out / "figures").glob("*.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csvs = {p.stem for p in (out / "tables").glob("*.csv")}
    assert csvs == set(rep.analysis.tables())
    assert len(pd.read_csv(out / "tables" / "trials.csv")) == len(rep.analysis.runs.trials)


def test_every_figure_is_referenced_and_inlined(rep):
    md = (rep.out_dir / "index.md").read_text()
    html = (rep.out_dir / "index.html").read_text()
    for name in rep.figures:
        assert f"figures/{name}.png" in md
    assert html.count("data:image/png;base64,") == len(rep.figures)
    assert "<table>" in html


def test_headline_table_carries_n(rep, study, runs):
    md = (rep.out_dir / "index.md").read_text()
    section = md.split("## 1. Success")[1].split("![success]")[0]
    header = next(line for line in section.splitlines() if line.startswith("| strategy"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "strategy",
        "arm",
        "planned",
        "finished",
        "excluded (why)",
        "missing",
        "success per protocol [95% CI]",
        "success, intention to treat [95% CI]",
    ]
    rows = [line for line in section.splitlines() if line.startswith("| raw")]
    assert len(rows) == len(study.arms), section  # one per arm
    for row in rows:
        cells = row.strip("|").split("|")
        for cell in cells[-2:]:
            assert re.fullmatch(r" \d\.\d\d \[\d\.\d\d, \d\.\d\d\] \(n=\d+\) ", cell), cell
    assert f"**{study.finished} finished trials**" in md and f"**{study.excluded} excluded**" in md
    # The mismatch sentence counts what the trials show: outcome pairs that differ from baseline.
    t = runs.trials
    key = ["strategy", "task_seed", "rep"]
    base = t[t["arm"] == "baseline"].set_index(key)["success"]
    other = t[t["arm"] != "baseline"].set_index(key)
    differ = int((other["success"] != base.reindex(other.index)).sum())
    assert f"{differ} of {len(other)} trials outside `baseline` have a different outcome" in md


def test_success_csv_matches_trials(rep):
    s = pd.read_csv(rep.out_dir / "tables" / "success.csv")
    t = rep.analysis.runs.trials
    assert s["n"].sum() == len(t) and s["successes"].sum() == t["success"].sum()
    assert ((s["ci_lo"] <= s["rate"]) & (s["rate"] <= s["ci_hi"])).all()


def _pairs_of(rep, r):
    t = rep.analysis.runs.trials
    keys = ["study", "model", "task_family", "task_seed", "rep"]
    a = t[(t["arm"] == r.arm) & (t["strategy"] == r.strategy)]
    b = t[(t["arm"] == r.arm) & (t["strategy"] == r.reference)]
    m = a.merge(b, on=keys, suffixes=("", "_ref"))
    return m["success"], m["success_ref"], m["task_seed"]


def test_power_as_run_beside_every_comparison(rep):
    """Each paired comparison states its test, its power for a 10-point difference and its MDE
    at 80%, at Holm's first step over the family, from its own discordance and seeds: the
    fixture's 2 seeds x 2 reps get the sign flip over seeds, which cannot reject with 2 seeds."""
    v = rep.analysis.vs_reference
    alpha = 0.05 / len(v)
    for r in v.itertuples():
        assert r.n_eff <= r.n_pairs and r.n_seeds == rep.analysis.runs.trials["task_seed"].nunique()
        assert r.test == "sign flip over seeds" and r.n_seeds < seedpower.min_seeds(alpha)
        assert r.power == 0 and r.mde == math.inf
        assert r.p == pytest.approx(stats.mcnemar_clustered(*_pairs_of(rep, r))["p"])
    md = (rep.out_dir / "index.md").read_text()
    section = md.split("### Paired vs")[1].split("### Strategy")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "(n=" in line]
    assert len(rows) == len(v)
    header = next(x for x in section.splitlines() if x.startswith("| arm |")).strip("|").split("|")
    test_col = [h.strip() for h in header].index("test (n)")
    for line in rows:  # the test, power and MDE cells each carry the n they rest on
        cells = line.strip("|").split("|")
        assert re.fullmatch(r" sign flip over seeds \(\d+ pairs, 2 seeds\) ", cells[test_col]), line
        assert (
            cells[-2] == " 0.00 (2 seeds, simulated) " and cells[-1] == " none ≤ 1 (2 seeds, simulated) "
        ), line
    assert f"fewer than {seedpower.min_seeds(alpha)} seeds at α/K = 0.05/{len(v)}" in section
    c = rep.analysis.continuous
    assert (c["test"] == "signed-rank on seed means").all() and (c["mde"] == math.inf).all()
    assert "MDE at 80% power" in md.split("## 2.")[1]
    m = report.headline_metrics(rep.analysis)
    assert any(k.startswith("report.success_power.") for k in m) and all(math.isfinite(x) for x in m.values())


def test_logged_back_to_the_parent_run(rep, study):
    from mlflow import MlflowClient

    assert rep.logged_to == study.parent_run_id
    client = MlflowClient(tracking_uri=study.uri)
    parent = client.get_run(study.parent_run_id)
    s = rep.analysis.success.set_index(["strategy", "arm"])
    assert parent.data.metrics["report.success.raw.baseline"] == pytest.approx(
        s.loc[("raw", "baseline"), "rate"]
    )
    assert parent.data.metrics["report.success_n.raw.baseline"] == s.loc[("raw", "baseline"), "n"]
    assert "report.interaction_perm_p" in parent.data.metrics
    names = {f.path for f in client.list_artifacts(study.parent_run_id, "report")}
    assert {"report/index.md", "report/index.html", "report/figures", "report/tables"} <= names
    figures = {f.path for f in client.list_artifacts(study.parent_run_id, "report/figures")}
    assert "report/figures/success.png" in figures
    assert parent.data.tags["ctxbench.report"] == "report/index.html"


def test_no_runs_exit_code_and_message(study, capsys, tmp_path):
    missing = tmp_path / "none.db"
    assert cli.main([f"tracking.uri=sqlite:///{missing}", f"report.dir={tmp_path / 'r'}"]) == 1
    assert "no finished ctxbench trials" in capsys.readouterr().err
    assert not missing.exists(), "reading must not create a tracking db"
    assert cli.main([f"tracking.uri={study.uri}", "study=no-such-study", f"report.dir={tmp_path / 'r'}"]) == 1
    err = capsys.readouterr().err
    assert "no-such-study" in err and "no trials" in err
    assert cli.main([f"tracking.uri={study.uri}", "study=broken", f"report.dir={tmp_path / 'r'}"]) == 1
    assert "only unfinished trials found: {'FAILED': 1}" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_module_entry_point_from_another_cwd(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "analysis.report", f"tracking.uri=sqlite:///{tmp_path / 'x.db'}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "no finished ctxbench trials" in proc.stderr


def test_overrides_and_defaults(tmp_path):
    assert cli.parse_overrides(["study=demo", "tracking.experiment=x", "+report.dir=/tmp/r"]) == {
        "study.name": "demo",
        "tracking.experiment": "x",
        "report.dir": "/tmp/r",
    }
    with pytest.raises(SystemExit, match="unknown argument"):
        cli.parse_overrides(["strategy=raw"])
