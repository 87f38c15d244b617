"""A new SQLite store starts as a copy of an empty one.

Opening an SQLite store that does not exist yet runs MLflow's whole chain of schema migrations
(alembic, one module per revision): about 2 s of CPU for every results folder a study or a trial
starts from nothing. That chain runs once per machine and MLflow version, into a template in the
cache (`$CTXBENCH_CACHE`, else `~/.cache/ctxbench`); a new store is a copy of it. The copy is the
file MLflow would have made: the same migrations, no run and no experiment but MLflow's own
`Default`, whose artifact location (never used by ctxbench, which writes to its named
experiments) is the template's rather than the working directory's.

Best effort: where the cache cannot be written, or the store is not a plain SQLite file, MLflow
makes the store itself, as before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "sqlite:///"


def sqlite_path(uri: str) -> Path | None:
    """The file behind a plain `sqlite:///` URI (relative to the working directory after three
    slashes, absolute after four); None for any other store, an in-memory one, or one with options."""
    if not uri.startswith(PREFIX):
        return None
    rest = uri[len(PREFIX) :]
    if not rest or "?" in rest or rest == ":memory:":
        return None
    return Path(rest)


def cache_root() -> Path:
    return Path(os.environ.get("CTXBENCH_CACHE") or Path.home() / ".cache" / "ctxbench")


def template() -> Path:
    """The empty, migrated store for this MLflow, made on first use."""
    import mlflow

    made = cache_root() / "mlflow" / f"empty-{mlflow.__version__}.db"
    if made.exists():
        return made
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    made.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=made.parent) as work:
        db = Path(work) / "mlflow.db"
        store = SqlAlchemyStore(f"{PREFIX}{db}", str(Path(work) / "mlruns"))  # runs every migration
        store.engine.dispose()  # every connection closed before the file is copied
        os.replace(db, made)  # two processes making it at once each put a whole one in place
    return made


def provision(uri: str) -> None:
    """If `uri` names an SQLite file that does not exist yet, put a copy of the template there.
    Never over a store another process has just made: the copy is linked into place, which fails
    where a file is already there."""
    path = sqlite_path(uri)
    if path is None or path.exists():
        return
    with contextlib.suppress(Exception):  # whatever went wrong, MLflow's own making says it
        source = template()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        os.close(fd)
        try:
            shutil.copyfile(source, tmp)
            os.link(tmp, path)
        finally:
            os.unlink(tmp)
