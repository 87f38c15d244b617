"""An empty MLflow store made once per test session and copied into a results folder.

Opening a new SQLite store runs MLflow's whole chain of schema migrations (alembic): about
1.6 s of CPU, and 9-12 s of wall on the loaded 2-core CI machine, for every results folder a
test starts from nothing. The copy is the same file MLflow would have made (the same client,
the same migrations, no run or experiment but MLflow's own `Default`), so what the harness
writes into it, and what the test reads back, is what it would be in a store of its own.

Use it where the store's creation is not what the test is about; a first run into an empty
results folder is still made by the tests that do not seed (e.g. tests/bench/study/test_leak.py).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

_template: Path | None = None


def _make_template() -> Path:
    from mlflow.tracking import MlflowClient

    folder = Path(tempfile.mkdtemp(prefix="ctxbench-store-"))
    atexit.register(shutil.rmtree, folder, True)
    db = folder / "mlflow.db"
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    client.search_experiments()  # creates the tables: every migration to MLflow's head revision
    store = client._tracking_client.store
    store.engine.dispose()  # every connection closed before the file is copied
    return db


def seeded(results: Path) -> Path:
    """`results` (created if need be) holding an empty, migrated mlflow.db, unless it has one."""
    global _template
    if _template is None:
        _template = _make_template()
    results.mkdir(parents=True, exist_ok=True)
    target = results / "mlflow.db"
    if not target.exists():
        shutil.copyfile(_template, target)
    return results
