"""Where two trials part ways: ``python -m analysis.diff A [B] [--rep-twin] [-o PAGE]``.

A and B are MLflow run ids or event logs (``events.jsonl`` or its trial directory).
Without B, A is compared with its baseline twin: the same study, model, strategy, task
family and seed and rep in arm ``baseline`` -- the pair the report's cross-arm mismatch
is about. With ``--rep-twin``, B is another rep of A's own cell (same strategy, arm and
task seed): the within-cell view of where two reps' trees part.

The page (analysis/diff/html.py) is one self-contained HTML file. The divergent turn
and its trigger come from analysis/diff/mismatch.py, so the page and the report agree.
Exit 0 with the page written; 2 with one line when an input or the twin is missing.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from analysis.diff.html import write_page
from analysis.diff.mismatch import read_log
from analysis.diff.trajectory import Diff, Trajectory, compare
from analysis.load import run_blobs, sqlite_path
from analysis.settings import REPO

IDENTITY = ("study", "model", "strategy", "arm", "task_family", "task_seed", "rep")
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
_TAG_KEYS = (
    "study",
    "strategy",
    "arm",
    "task_family",
    "task_seed",
    "rep",
    "model",
    "status",
    "failure_reason",
    "final_tree_sha",
    "study.sample",
    "study.sample_note",
)


class DiffError(Exception):
    """An input or a twin that cannot be found; its message is the CLI's one line."""


# -- finding trials ------------------------------------------------------------------------
def _client(uri: str):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _run_meta(run) -> dict[str, Any]:
    tags, metrics = run.data.tags, run.data.metrics
    meta: dict[str, Any] = {k: tags[k] for k in _TAG_KEYS if k in tags}
    for k in ("success", "steps_passed"):
        if k in metrics:
            meta[k] = metrics[k]
    meta.update(
        run_id=run.info.run_id,
        run_name=run.info.run_name,
        experiment_id=run.info.experiment_id,
        mlflow_status=run.info.status,
    )
    return meta


def from_run(run) -> Trajectory:
    import mlflow.artifacts

    try:
        text = mlflow.artifacts.load_text(f"{run.info.artifact_uri.rstrip('/')}/events.jsonl")
    except Exception as exc:  # the store's own error type varies with the store
        raise DiffError(f"run {run.info.run_id} has no readable events.jsonl ({type(exc).__name__})") from exc
    return Trajectory.from_text(
        text, run.info.run_name or run.info.run_id, _run_meta(run), run_blobs(run.info.artifact_uri)
    )


def _dir_meta(trial_dir: Path) -> dict[str, Any]:
    """Identity from the trial directory's config.yaml (the harness writes it beside the log)."""
    import yaml

    try:
        cfg = yaml.safe_load((trial_dir / "config.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}

    def get(*keys):
        node = cfg
        for k in keys:
            node = node.get(k) if isinstance(node, dict) else None
        return node

    agent = get("agent", "name")  # an agent's trial: the agent is its level, as its MLflow tags say
    level = agent if agent not in (None, "own") else get("strategy", "name")
    meta = {
        "study": get("study", "name"),
        "strategy": level,
        "arm": get("arm", "name"),
        "task_family": get("task", "family"),
        "task_seed": get("task", "seed"),
        "rep": get("rep"),
        "model": get("model", "name"),
        "study.sample": get("study", "sample"),
        "study.sample_note": get("study", "sample_note"),
    }
    return {k: v for k, v in meta.items() if v is not None}


def resolve(target: str, uri: str | None) -> Trajectory:
    path = Path(target)
    if path.is_dir():
        path = path / "events.jsonl"
    if path.is_file():
        return Trajectory.from_path(
            path, path.parent.name, {**_dir_meta(path.parent), "_dir": str(path.parent)}
        )
    if not _RUN_ID.match(target):
        raise DiffError(f"{target}: no such event log, and not an MLflow run id")
    uri = uri or default_uri()
    db = sqlite_path(uri)
    if db is not None and not db.is_file():  # MLflow would create an empty database there
        raise DiffError(f"{target}: no such event log, and no MLflow database at {db}")
    try:
        run = _client(uri).get_run(target)
    except Exception as exc:
        raise DiffError(f"no MLflow run {target} at {uri}") from exc
    return from_run(run)


def _ident(meta: dict) -> str:
    return ", ".join(f"{k}={meta.get(k, '?')}" for k in IDENTITY)


def _pick(candidates: list[dict], own: dict, own_tree: str, mode: str) -> dict | None:
    """Baseline twin: the newest FINISHED run. Rep twin: the lowest other rep, preferring
    one whose final tree differs (that pair is the within-cell mismatch to look at)."""
    if mode == "rep":
        candidates = [c for c in candidates if str(c["meta"].get("rep")) != str(own.get("rep"))]
    candidates = [c for c in candidates if c["status"] == "FINISHED"] or candidates
    if not candidates:
        return None

    def rank(c: dict) -> tuple:
        rep = str(c["meta"].get("rep", ""))
        same_tree = bool(own_tree) and c["meta"].get("final_tree_sha") == own_tree
        return (same_tree, int(rep) if rep.isdigit() else 0, -c["time"]) if mode == "rep" else (-c["time"],)

    return min(candidates, key=rank)


def _final_tree(log: Path) -> str:
    """The final tree sha from a log's last record, reading only the file's tail."""
    with log.open("rb") as fh:
        fh.seek(max(0, log.stat().st_size - 4096))
        last = fh.read().decode("utf-8", "replace").rstrip("\n").rsplit("\n", 1)[-1]
    end = read_log(last).end
    return end.final_tree_sha if end is not None else ""


def find_twin(a: Trajectory, mode: str, uri: str | None) -> Trajectory:
    """A's baseline twin (``mode="baseline"``) or another rep of its cell (``"rep"``)."""
    want = {k: str(a.meta[k]) for k in IDENTITY if a.meta.get(k) not in (None, "")}
    if mode == "baseline":
        if want.get("arm") == "baseline":
            raise DiffError(f"{a.label} is itself in arm baseline; give B, or use --rep-twin")
        want["arm"] = "baseline"
    else:
        want.pop("rep", None)
    if "run_id" in a.meta:
        client = _client(uri or default_uri())
        quoted = {k: v.replace("'", "\\'") for k, v in want.items()}
        filt = " AND ".join(
            ["tags.`ctxbench.kind` = 'trial'"] + [f"tags.{k} = '{v}'" for k, v in quoted.items()]
        )
        runs = client.search_runs([a.meta["experiment_id"]], filter_string=filt, max_results=1000)
        cands = [
            {"run": r, "meta": _run_meta(r), "status": r.info.status, "time": r.info.start_time or 0}
            for r in runs
            if r.info.run_id != a.meta["run_id"]
        ]
        where = f"MLflow ({uri or default_uri()})"
    else:
        root = Path(a.meta["_dir"]).parent
        cands = []
        for log in sorted(root.glob("*/events.jsonl")):
            meta = {k: str(v) for k, v in _dir_meta(log.parent).items()}
            if log.parent.name != a.label and all(meta.get(k) == v for k, v in want.items()):
                meta["final_tree_sha"] = _final_tree(log)
                cands.append({"path": log, "meta": meta, "status": "FINISHED", "time": log.stat().st_mtime})
        where = f"trial directories under {root}"
    pick = _pick(cands, a.meta, a.outcome["final_tree_sha"], mode)
    if pick is None:
        what = "baseline twin" if mode == "baseline" else "other rep of the same cell"
        raise DiffError(
            f"no {what} for {a.label} ({_ident({**a.meta, **want})}) in {where}; give B explicitly"
        )
    if "run" in pick:
        return from_run(pick["run"])
    return Trajectory.from_path(
        pick["path"], pick["path"].parent.name, {**pick["meta"], "_dir": str(pick["path"].parent)}
    )


@functools.cache
def default_uri() -> str:
    from analysis.settings import defaults

    return str(defaults()["tracking.uri"])


def summary_line(d: Diff) -> str:
    oa, ob = d.a.outcome, d.b.outcome
    res = d.attribution
    side = {"a": "A", "b": "B"}.get(res.get("trigger_in"), res.get("trigger_in"))
    where = (
        "no divergent turn"
        if d.diverged_at is None
        else (
            f"diverged at turn {d.diverged_at} (trigger: {res['trigger']}"
            + (
                f" at turn {res['trigger_turn']} in {side}, lag {res['lag_turns']}"
                if res.get("trigger_turn") is not None
                else ""
            )
            + ")"
        )
    )
    return (
        f"A {oa['status']} {oa['failure_reason']}".rstrip()
        + f" vs B {ob['status']} {ob['failure_reason']}".rstrip()
        + f"; {where}"
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m analysis.diff", description=__doc__.split("\n\n")[0])
    p.add_argument("a", help="run id, events.jsonl or trial directory")
    p.add_argument("b", nargs="?", help="the trial to compare with (default: A's baseline twin)")
    p.add_argument("--rep-twin", action="store_true", help="compare with another rep of A's cell")
    p.add_argument("-o", "--out", type=Path, help="page path (default results/diff/A_vs_B.html)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: the project's config)")
    return p


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.b and args.rep_twin:
        ap.error("give B or --rep-twin, not both")
    t0 = time.perf_counter()
    try:
        a = resolve(args.a, args.tracking_uri)
        mode = "explicit" if args.b else ("rep" if args.rep_twin else "baseline")
        b = resolve(args.b, args.tracking_uri) if args.b else find_twin(a, mode, args.tracking_uri)
    except DiffError as exc:
        print(f"analysis.diff: {exc}", file=sys.stderr)
        return 2
    d = compare(a, b, mode)
    results = os.environ.get("CTXBENCH_RESULTS") or REPO / "results"
    out = args.out or Path(results) / "diff" / f"{_short(a)}_vs_{_short(b)}.html"
    write_page(d, out)
    print(
        f"analysis.diff: {summary_line(d)} -> {out} ({out.stat().st_size / 1024:.0f} KB, "
        f"{time.perf_counter() - t0:.2f} s)"
    )
    return 0


def _short(t: Trajectory) -> str:
    return str(t.meta.get("run_id", t.label))[:16].replace("/", "_")


if __name__ == "__main__":
    raise SystemExit(main())
