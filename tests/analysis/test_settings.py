"""analysis.settings: tracking.* and the report dir from the project's Hydra config (never restated
here), the analysis's own report defaults, and a config that does not compose is one line, never a
silent fallback."""

from __future__ import annotations

import pytest

from analysis import settings
from analysis.settings import REPO, SettingsError


def test_the_project_config_gives_tracking_and_the_report_dir(monkeypatch):
    monkeypatch.delenv("CTXBENCH_RESULTS", raising=False)
    d = settings.defaults()
    assert (
        d["tracking.uri"] == f"sqlite:///{REPO / 'results' / 'mlflow.db'}"
        and d["tracking.experiment"] == "ctxbench"
    )
    assert d["report.dir"] == str(REPO / "results" / "report") and d["study.name"] is None


def test_defaults_read_the_hydra_config(tmp_path):
    (tmp_path / "tracking").mkdir()
    (tmp_path / "config.yaml").write_text("defaults:\n  - tracking: local\n  - _self_\nresults_dir: /tmp/r\n")
    (tmp_path / "tracking" / "local.yaml").write_text("uri: sqlite:///results/other.db\nexperiment: exp2\n")
    d = settings.defaults(tmp_path)
    assert d["tracking.uri"] == f"sqlite:///{REPO / 'results' / 'other.db'}"
    assert (d["tracking.experiment"], d["report.dir"]) == ("exp2", "/tmp/r/report")


@pytest.mark.parametrize(
    "files, message",
    [
        ({}, r"config\.yaml is missing: the analysis reads tracking\.\* and results_dir"),
        (
            {"config.yaml": "defaults:\n  - missing_group: nope\n"},
            r"does not compose \(.*missing_group.*\); fix it",
        ),
        (
            {"config.yaml": "results_dir: /tmp/r\ntracking:\n  uri: sqlite:///x.db\n"},
            r"^tracking\.experiment is not set",
        ),
    ],
)
def test_a_config_that_cannot_give_the_settings_is_one_line(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(SettingsError, match=message) as e:
        settings.defaults(tmp_path)
    assert "\n" not in str(e.value)
