"""Finished trials to calibrate on: event logs by path, MLflow run ids, or a study name.

A target is tried in this order: an `events.jsonl`, a trial directory holding one, a directory
with `trials/*/events.jsonl` under it (a results dir), a 32-hex MLflow run id, else a study
name in the tracking store. Only trials that reached a verdict (success or failure) count: a
crash says nothing about the model. The trial's resolved `config.yaml` comes along (written
beside the log and logged as an artifact): it names the model and its provider.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from analysis.load import run_blobs
from ctxlog import events as ev
from ctxlog.blobs import DIR, Source, directory
from ctxlog.reader import Log

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
VERDICTS = ("success", "failure")


@dataclass
class Trial:
    name: str
    log: Log  # its events, through the one reader (ctxlog/reader.py)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def start(self) -> ev.TrialStart:
        return self.log.start

    @property
    def end(self) -> ev.TrialEnd:
        """The trial's end; an empty one (no status) when the log has none: the trial never ended."""
        return self.log.end or ev.TrialEnd()

    @property
    def provider(self) -> str:
        return str((self.config.get("model") or {}).get("provider") or "")

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.config
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return default if node is None else node


def parse(text: str, name: str, config_text: str | None = None, blobs: Source | None = None) -> Trial:
    log = Log.from_text(text, strict=True, name=name, blobs=blobs)
    config = yaml.safe_load(config_text) if config_text else {}
    return Trial(name, log, config if isinstance(config, dict) else {})


def _from_path(path: Path) -> list[Trial]:
    if path.is_dir() and (path / "events.jsonl").is_file():
        path = path / "events.jsonl"
    if path.is_file():
        config = path.parent / "config.yaml"
        return [
            parse(
                path.read_text(),
                path.parent.name,
                config.read_text() if config.is_file() else None,
                directory(path.parent / DIR),
            )
        ]
    return [t for log in sorted(path.glob("**/trials/*/events.jsonl")) for t in _from_path(log)]


def _from_runs(runs: list[Any]) -> list[Trial]:
    import mlflow.artifacts

    out = []
    for run in runs:
        base = run.info.artifact_uri.rstrip("/")
        try:
            text = mlflow.artifacts.load_text(f"{base}/events.jsonl")
        except Exception as exc:  # the store's own error type varies with the store
            raise SystemExit(
                f"run {run.info.run_id} has no readable events.jsonl ({type(exc).__name__})"
            ) from exc
        try:
            config = mlflow.artifacts.load_text(f"{base}/config.yaml")
        except Exception:
            config = None
        out.append(parse(text, run.info.run_name or run.info.run_id, config, run_blobs(base)))
    return out


def load(targets: list[str], tracking_uri: str, experiment: str = "ctxbench") -> list[Trial]:
    trials: list[Trial] = []
    for target in targets:
        path = Path(target)
        if path.exists():
            found = _from_path(path)
        else:
            from mlflow import MlflowClient

            client = MlflowClient(tracking_uri=tracking_uri)
            if _RUN_ID.match(target):
                found = _from_runs([client.get_run(target)])
            else:
                from analysis.load import load_runs

                runs = load_runs(tracking_uri, experiment, target, curves=False, client=client)
                found = (
                    _from_runs([client.get_run(r) for r in runs.trials["run_id"]]) if not runs.empty else []
                )
        if not found:
            raise SystemExit(
                f"{target}: no event log there, no such run and no trials in a study of that name"
            )
        trials += found
    return [t for t in trials if t.end.status in VERDICTS]
