"""analysis.settings: the analysis's defaults, from the project's Hydra config when it composes."""

from __future__ import annotations

from analysis import settings
from analysis.settings import REPO


def test_built_in_defaults_are_rooted_at_the_repo(tmp_path):
    d = settings.defaults(tmp_path)  # no config.yaml there: built-in defaults, rooted at the repo
    assert d["tracking.uri"] == f"sqlite:///{REPO / 'results' / 'mlflow.db'}"
    assert d["report.dir"] == str(REPO / "results" / "report") and d["study.name"] is None


def test_defaults_read_the_hydra_config(tmp_path):
    (tmp_path / "tracking").mkdir()
    (tmp_path / "config.yaml").write_text("defaults:\n  - tracking: local\n  - _self_\n")
    (tmp_path / "tracking" / "local.yaml").write_text("uri: sqlite:///results/other.db\nexperiment: exp2\n")
    d = settings.defaults(tmp_path)
    assert d["tracking.uri"] == f"sqlite:///{REPO / 'results' / 'other.db'}"
    assert d["tracking.experiment"] == "exp2"
    (tmp_path / "config.yaml").write_text("defaults:\n  - missing_group: nope\n")
    assert settings.defaults(tmp_path)["tracking.experiment"] == "ctxbench"
