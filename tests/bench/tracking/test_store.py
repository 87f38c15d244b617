"""A new SQLite store is a copy of an empty, migrated one (bench/tracking/store.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench.tracking import store


def _schema(db: Path) -> dict[str, object]:
    """Every table and index with its columns, and the migration revision. Not the tables' SQL
    text: MLflow's own spells a CHECK's values in an order that differs from run to run."""
    with sqlite3.connect(db) as con:
        names = con.execute("SELECT type, name FROM sqlite_master ORDER BY name").fetchall()
        shape = {
            f"{kind} {name}": con.execute(
                f"PRAGMA {'table' if kind == 'table' else 'index'}_info('{name}')"
            ).fetchall()
            for kind, name in names
        }
        shape["revision"] = con.execute("SELECT version_num FROM alembic_version").fetchall()
    return shape


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def in_cache(cache, monkeypatch) -> Path:
    monkeypatch.setenv("CTXBENCH_CACHE", str(cache))
    return cache


def test_a_new_store_is_the_file_mlflow_would_have_made(in_cache, tmp_path):
    from mlflow.tracking import MlflowClient

    own = tmp_path / "own" / "mlflow.db"
    own.parent.mkdir()
    MlflowClient(tracking_uri=f"sqlite:///{own}").search_experiments()
    copied = tmp_path / "results" / "mlflow.db"
    store.provision(f"sqlite:///{copied}")
    assert _schema(copied) == _schema(own)
    experiments = MlflowClient(tracking_uri=f"sqlite:///{copied}").search_experiments()
    assert [e.name for e in experiments] == ["Default"]
    assert list(in_cache.glob("mlflow/empty-*.db")), "the template was not kept in the cache"


def test_a_store_that_exists_is_never_replaced(in_cache, tmp_path):
    db = tmp_path / "mlflow.db"
    db.write_bytes(b"a store of its own")
    store.provision(f"sqlite:///{db}")
    assert db.read_bytes() == b"a store of its own"


def test_a_store_made_by_another_process_meanwhile_is_kept(in_cache, tmp_path, monkeypatch):
    db = tmp_path / "mlflow.db"
    real_copy = store.shutil.copyfile

    def racing(src, dst):  # the other process's store lands between the look and the link
        db.write_bytes(b"the other process's store")
        return real_copy(src, dst)

    monkeypatch.setattr(store.shutil, "copyfile", racing)
    store.provision(f"sqlite:///{db}")
    assert db.read_bytes() == b"the other process's store"
    assert [p.name for p in tmp_path.iterdir()] == ["mlflow.db"], "the copy was left behind"


def test_an_unwritable_cache_leaves_the_making_to_mlflow(monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("CTXBENCH_CACHE", str(blocker))
    db = tmp_path / "results" / "mlflow.db"
    store.provision(f"sqlite:///{db}")
    assert not db.exists()


@pytest.mark.parametrize(
    "uri",
    [
        "http://127.0.0.1:5000",
        "postgresql://u@h/db",
        "sqlite:///:memory:",
        "sqlite:///x.db?mode=ro",
        "sqlite:///",
    ],
)
def test_only_a_plain_sqlite_file_is_provisioned(uri):
    assert store.sqlite_path(uri) is None


def test_three_slashes_are_relative_and_four_absolute():
    assert store.sqlite_path("sqlite:///results/mlflow.db") == Path("results/mlflow.db")
    assert store.sqlite_path("sqlite:////abs/mlflow.db") == Path("/abs/mlflow.db")
