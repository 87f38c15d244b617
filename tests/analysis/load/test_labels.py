"""Honest labels: a selected sample is announced on every page; every headline number states its
n, seeds, reps, model and code version, and a study whose trials ran different code says so."""

from __future__ import annotations

import dataclasses
import shutil

import pandas as pd
import pytest

from analysis import load_runs
from analysis.load import labels
from analysis.report import build as report

NOTE = "seed 1 only, <picked> because compaction changes outcomes there"


def _frame(**cols) -> pd.DataFrame:
    base = {
        "study": ["a", "a", "b"],
        "strategy": ["raw", "ledger", "raw"],
        "arm": ["baseline"] * 3,
        "model": ["sim"] * 3,
        "task_family": ["f"] * 3,
        "task_seed": [1, 1, 2],
        "rep": [0, 0, 0],
        "git_sha": ["a" * 40] * 3,
    }
    return pd.DataFrame({**base, **cols})


def test_sample_per_study():
    t = _frame(
        **{"study.sample": ["selected", "selected", "unbiased"], "study.sample_note": [NOTE, NOTE, ""]}
    )
    s = labels.sample(t)
    assert s.selected == {"a": NOTE} and s.unrecorded == () and s.label == "selected"
    html = labels.banner_html(s)
    assert "&lt;picked&gt;" in html and "<picked>" not in html and "<code>a</code>" in html
    assert labels.sample(_frame(**{"study.sample": ["unbiased"] * 3})).label == "unbiased"
    old = labels.sample(_frame())  # trials from before the tag existed
    assert old.unrecorded == ("a", "b") and old.label == "not recorded" and labels.banner_html(old) == ""


def test_stamp_once_after_body():
    banner = labels.banner_html(labels.Sample({"demo": "picked"}))
    page = '<!doctype html><html><head><title>x</title></head><body class="p"><h1>x</h1></body></html>'
    once = labels.stamp(page, banner)
    assert once.index(banner) == once.index('<body class="p">') + len('<body class="p">')
    assert labels.stamp(once, banner) == once and labels.stamp(page, "") == page
    assert labels.stamp("<h1>fragment</h1>", banner).startswith(banner)


def test_basis_states_n_seeds_reps_model_code_and_mixed_code():
    t = _frame()
    assert labels.basis(t) == (
        "3 trials; 2 task seeds (f #1, f #2) × 1 rep(s) per cell; model sim; "
        "code aaaaaaaaaa; sample not recorded"
    )
    mixed = _frame(git_sha=["a" * 40, "b" * 40 + "-dirty", "a" * 40])
    text = labels.basis(mixed)
    assert (
        "code: 2 versions, aaaaaaaaaa (2 trials), bbbbbbbbbb-dirty (1 trial) — the trials ran different code"
        in text
    )
    cells = labels.cell_basis(mixed)
    assert list(cells["code"]) == ["aaaaaaaaaa", "bbbbbbbbbb-dirty"] and labels.varies(cells)
    assert not labels.varies(labels.cell_basis(t.iloc[:2]))
    assert "code version not recorded" in labels.basis(_frame(git_sha=[None] * 3))


@pytest.fixture(scope="module")
def selected(study, tmp_path_factory):
    """The harness-written study (tests/helpers/harness_study.py), copied and tagged as a selected
    sample, one trial marked as run on other code, and a page of someone else's in the report
    directory. The copy keeps the session's study untouched for the other tests."""
    from mlflow import MlflowClient

    root = tmp_path_factory.mktemp("selected")
    shutil.copy(study.root / "mlflow.db", root / "mlflow.db")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(uri)
    for i, run_id in enumerate(study.run_ids.values()):
        client.set_tag(run_id, "study.sample", "selected")
        client.set_tag(run_id, "study.sample_note", NOTE)
        if i == 0:
            client.set_tag(run_id, "git_sha", "1" * 40 + "-dirty")
    out = root / "report"
    (out / "extra").mkdir(parents=True)
    (out / "extra" / "page.html").write_text("<!doctype html><html><body><h1>extra</h1></body></html>")
    rep = report.generate(
        uri, study.experiment, study.study, out, runs=load_runs(uri, study.experiment, study.study)
    )
    return dataclasses.replace(study, uri=uri), rep


def test_every_page_of_a_selected_study_carries_the_banner(selected):
    from mlflow import MlflowClient
    from mlflow.artifacts import load_text

    fx, rep = selected
    md = (rep.out_dir / "index.md").read_text()
    assert md.splitlines()[2].startswith(f'<div class="{labels.BANNER_CLASS}"') and "&lt;picked&gt;" in md
    diffs = sorted(p.relative_to(rep.out_dir).as_posix() for p in (rep.out_dir / "diff").glob("*.html"))
    assert rep.pages.mismatch and diffs
    for page in ("index.html", "extra/page.html", *diffs):
        html = (rep.out_dir / page).read_text()
        assert html.count(labels.BANNER_CLASS) == 1 and "Selected sample, not an unbiased one." in html, page
    # the diff page's own copy in the trial's MLflow run carries it too (written before the report's pass)
    run_id = next(iter(rep.pages.mismatch))
    logged = load_text(f"{MlflowClient(fx.uri).get_run(run_id).info.artifact_uri}/diff/vs_baseline.html")
    assert logged.count(labels.BANNER_CLASS) == 1


def test_headline_tables_state_their_basis_and_mixed_code(selected):
    fx, rep = selected
    md = (rep.out_dir / "index.md").read_text()
    success = md.split("## 1. Success")[1].split("### Paired vs")[0]
    paired = md.split("### Paired vs")[1].split("### Strategy")[0]
    for section in (success, paired):
        line = next(x for x in section.splitlines() if x.startswith("Basis: "))
        assert line.startswith(
            "Basis: 16 trials; 2 task seeds (signature_migration #0, signature_migration #1) "
            "× 2 rep(s) per cell; model sim; code: 2 versions, "
        )
        assert "1111111111-dirty (1 trial) — the trials ran different code; sample selected." in line
    assert "The cells rest on different seeds, reps, models or code:" in success  # one cell ran other code
    from mlflow import MlflowClient

    tags = MlflowClient(fx.uri).get_run(fx.parent_run_id).data.tags
    assert tags["report.sample"] == "selected" and "the trials ran different code" in tags["report.basis"]
    versions = tags["report.code_versions"].split(", ")
    assert len(versions) == 2 and "1" * 40 + "-dirty" in versions


def test_the_level_column_is_headed_by_what_its_levels_are():
    """`strategy` while every level is one of ctxbench's strategies; `level` (conf/level/'s key) once
    an external agent plays one; the frames and their CSV keys stay `strategy`."""
    import pandas as pd

    from analysis.load import labels

    own = pd.DataFrame({"strategy": ["raw", "ledger"], "agent": ["", ""]})
    mixed = pd.DataFrame({"strategy": ["raw", "codex"], "agent": ["", "codex"]})
    assert labels.level_heading(own) == "strategy" and labels.level_heading(mixed) == "level"
    assert labels.level_heading(pd.DataFrame({"strategy": ["raw"]})) == "strategy"  # runs from before agents
    table = pd.DataFrame({"arm": ["baseline"], "strategy": ["codex"], "n (strategy / ref)": ["2 / 2"]})
    assert list(labels.headed_frame(table, "level").columns) == ["arm", "level", "n (level / ref)"]
    assert list(labels.headed_frame(table, "strategy").columns) == list(table.columns)
    assert labels.headed("3 strategies; strategy x arm", "level") == "3 levels; level x arm"
