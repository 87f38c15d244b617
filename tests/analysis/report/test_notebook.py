"""notebooks/compare.ipynb runs top to bottom on a study the harness wrote, so it cannot rot."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "compare.ipynb"


def _run(monkeypatch, uri: str, experiment: str, study: str | None):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("CTXBENCH_TRACKING_URI", uri)
    monkeypatch.setenv("CTXBENCH_EXPERIMENT", experiment)
    if study:
        monkeypatch.setenv("CTXBENCH_STUDY", study)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    return "\n".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs)


def test_notebook_executes_on_the_harness_study(study, runs, monkeypatch):
    text = _run(monkeypatch, study.uri, study.experiment, study.study)
    assert (
        f"{study.finished} finished trials, {study.excluded} excluded, {len(runs.curves)} trial-turns" in text
    )
    # the attribution tables were computed from the event logs
    assert "mismatches" in text and "diverged_at" in text and "trigger_turn" in text
    assert "image/png" not in text and text.count("<IPython.core.display.Image object>") >= 6


def test_notebook_outputs_are_not_committed():
    import json

    nb = json.loads(NOTEBOOK.read_text())
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")


def test_notebook_runs_without_any_runs(tmp_path, monkeypatch):
    text = _run(monkeypatch, f"sqlite:///{tmp_path / 'empty.db'}", "ctxbench", None)
    assert "Nothing to analyse" in text
    assert not (tmp_path / "empty.db").exists()
