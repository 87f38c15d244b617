"""A run's event log as MLflow holds it: its large values, each one artifact under `blobs/`
(ctxlog/blobs.py), read back only when a record names one."""

from __future__ import annotations

from ctxlog import blobs


def run_blobs(artifact_uri: str) -> blobs.Source:
    """The blobs of the run whose artifacts are at `artifact_uri`."""
    base = artifact_uri.rstrip("/")

    def read(sha: str) -> str | None:
        import mlflow.artifacts

        if len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha):
            return None  # never an artifact outside blobs/
        try:
            return mlflow.artifacts.load_text(f"{base}/{blobs.DIR}/{sha}")
        except Exception:  # a missing artifact surfaces as OSError or MlflowException depending on the store
            return None

    return read
