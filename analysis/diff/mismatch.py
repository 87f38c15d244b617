"""Run-to-run mismatch (docs/design.md §11): within a cell, and paired across arms.

Within a cell, reps of one task seed should converge on the same final tree; the
share of rep pairs that do not is the cell's tree mismatch. Across arms, a trial is
paired with the same (strategy, task seed, rep) in ``baseline``; where the outcome
differs, the two event logs are compared turn by turn and the first turn whose
model-visible actions differ is attributed to the nearest preceding compaction,
context truncation or drift event -- "mismatch triggered by compaction / by drift".
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.load import CELL, PAIR_KEY, TASK_KEY, run_blobs, sort_cells
from ctxlog import events as ev
from ctxlog.blobs import Source as BlobSource
from ctxlog.reader import Log

# context_truncation is the raw strategy's answer to the same window pressure that
# makes the compaction strategy compact; kept as its own label (docs/design.md §6 keeps the
# two truncations apart) rather than folded into "compaction".
TRIGGERS: tuple[type[ev.Event], ...] = (ev.Compaction, ev.ContextTruncation, ev.Drift)
TRIGGER_KINDS = tuple(c.kind for c in TRIGGERS)
_NOT_TURNS = (ev.TrialStart, ev.TrialEnd)
Source = Log | Iterable[dict]  # a parsed log, or its records (tests build records by hand)
EventFetcher = Callable[[str], "Log | None"]


def read_log(text: str, blobs: BlobSource | None = None) -> Log:
    """The one reader (ctxlog/reader.py), its events in seq order, large values put back from
    `blobs`. A killed trial can end on a torn line: it is counted in `unreadable`, and the records
    before it still tell the story."""
    log = Log.from_text(text, blobs=blobs)
    return Log(sorted(log.events, key=lambda e: e.seq), log.unreadable, log.lines, log.blob_problems)


def actions_by_turn(source: Source) -> dict[int, list[tuple[str, str]]]:
    """Model-visible actions per turn: the ordered (tool name, canonical args) calls.

    Every turn the log mentions is present, with an empty list when the model made no
    call; call ids and the volatile ``t`` timings are not part of an action.
    """
    turns: dict[int, list[tuple[str, str]]] = {}
    for e in Log.read(source).events:
        if isinstance(e, _NOT_TURNS) or e.turn is None:
            continue
        calls = turns.setdefault(e.turn, [])
        if isinstance(e, ev.ToolCall):
            calls.append((e.name, json.dumps(e.args, sort_keys=True, separators=(",", ":"))))
    return turns


def first_divergence(a: Source, b: Source) -> int | None:
    """First turn whose actions differ (a turn present in only one log differs)."""
    ta, tb = actions_by_turn(a), actions_by_turn(b)
    for turn in sorted(set(ta) | set(tb)):
        if ta.get(turn) != tb.get(turn):
            return turn
    return None


def _triggers(log: Log, upto: int) -> list[tuple[int, int, str]]:
    return [(e.turn, e.seq, e.kind) for e in log.of(*TRIGGERS) if e.turn is not None and e.turn <= upto]


def attribute(a: Source, b: Source, turn: int | None) -> dict:
    """Nearest compaction/truncation/drift event at or before ``turn`` in either log.

    Within one log a later event (higher seq) is nearer; if both logs have their
    nearest trigger on the same turn and they differ in kind, both kinds are named.
    """
    out: dict[str, Any] = {"trigger": "none", "trigger_turn": None, "trigger_in": None, "lag_turns": None}
    if turn is None:
        out["trigger"] = "no divergence"
        return out
    best: dict[str, tuple[int, int, str]] = {}
    for side, source in (("a", a), ("b", b)):
        found = _triggers(Log.read(source), turn)
        if found:
            best[side] = max(found)
    if not best:
        return out
    top = max(t for t, _, _ in best.values())
    sides = sorted(s for s, (t, _, _) in best.items() if t == top)
    kinds = sorted({best[s][2] for s in sides})
    out.update(
        trigger="+".join(kinds),
        trigger_turn=top,
        lag_turns=turn - top,
        trigger_in="both" if len(sides) == 2 else sides[0],
    )
    return out


def compare_logs(a: Source | None, b: Source | None) -> dict:
    if a is None or b is None:
        return {
            "diverged_at": None,
            "trigger": "events missing",
            "trigger_turn": None,
            "trigger_in": None,
            "lag_turns": None,
        }
    a, b = Log.read(a), Log.read(b)
    turn = first_divergence(a, b)
    return {"diverged_at": turn, **attribute(a, b, turn)}


def mlflow_event_fetcher(
    tracking_uri: str, artifact_uris: dict[str, str] | None = None, artifact: str = "events.jsonl"
) -> EventFetcher:
    """The ``events.jsonl`` of a run, read (`read_log`), or None if it has none.

    With the run's artifact URI (known from the search) the artifact store is read
    directly; otherwise MLflow resolves the run first, one extra query per run.
    """
    import mlflow.artifacts
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    uris = artifact_uris or {}

    def fetch(run_id: str) -> Log | None:
        try:
            if uris.get(run_id):
                return read_log(
                    mlflow.artifacts.load_text(f"{uris[run_id].rstrip('/')}/{artifact}"),
                    run_blobs(uris[run_id]),
                )
            # A download is read and removed at once: a report over a big study leaves no copies behind.
            with tempfile.TemporaryDirectory(prefix="ctxbench-events-") as tmp:
                text = Path(client.download_artifacts(run_id, artifact, tmp)).read_text()
                return read_log(text, run_blobs(client.get_run(run_id).info.artifact_uri))
        except Exception:  # a missing artifact surfaces as OSError or MlflowException depending on store
            return None

    return fetch


def within_cell(trials: pd.DataFrame) -> pd.DataFrame:
    """Per cell: rep pairs on the same task whose final trees (and outcomes) differ."""
    cell, task = list(CELL), [*CELL, *TASK_KEY]

    def pairs(sizes: pd.Series) -> pd.Series:
        return sizes * (sizes - 1) // 2

    def differing(col: str, frame: pd.DataFrame) -> pd.DataFrame:
        all_pairs = pairs(frame.groupby(task).size()).groupby(cell).sum()
        same = pairs(frame.groupby([*task, col]).size()).groupby(cell).sum()
        return pd.DataFrame(
            {"pairs": all_pairs, "differ": all_pairs - same.reindex(all_pairs.index, fill_value=0)}
        )

    trees = trials.loc[trials["final_tree_sha"].fillna("") != ""]
    t = differing("final_tree_sha", trees) if not trees.empty else pd.DataFrame(columns=["pairs", "differ"])
    o = differing("success", trials)
    out = trials.groupby(cell).agg(n_trials=("run_id", "size"))
    out["n_tasks"] = trials.groupby(task).size().groupby(cell).size()
    out["n_pairs"] = t["pairs"].reindex(out.index, fill_value=0).astype(int)
    out["tree_differs"] = t["differ"].reindex(out.index, fill_value=0).astype(int)
    out["n_outcome_pairs"], out["outcome_differs"] = o["pairs"].astype(int), o["differ"].astype(int)
    out["tree_mismatch"] = out["tree_differs"] / out["n_pairs"].where(out["n_pairs"] > 0)
    out["outcome_mismatch"] = out["outcome_differs"] / out["n_outcome_pairs"].where(
        out["n_outcome_pairs"] > 0
    )
    cols = [
        "n_trials",
        "n_tasks",
        "n_pairs",
        "tree_differs",
        "tree_mismatch",
        "n_outcome_pairs",
        "outcome_differs",
        "outcome_mismatch",
    ]
    return sort_cells(out[cols].reset_index())


def cross_arm(
    trials: pd.DataFrame,
    reference_arm: str = "baseline",
    fetch: EventFetcher | None = None,
    workers: int = 8,
    divergence: str = "outcome",
) -> pd.DataFrame:
    """Each non-reference trial against its reference-arm twin.

    The divergence turn and its trigger are computed for outcome-differing pairs
    (``divergence="outcome"``, the mismatches to explain) or for every pair
    (``"all"``: trajectories can part without changing the outcome). Event logs are
    fetched only for the trials of those pairs, each once.
    """
    if divergence not in ("outcome", "all"):
        raise ValueError(f"divergence must be 'outcome' or 'all', not {divergence!r}")
    cols = ["run_id", "success", "failure_reason", "final_tree_sha"]
    base = trials.loc[trials["arm"] == reference_arm, ["strategy", *PAIR_KEY, *cols]]
    other = trials.loc[trials["arm"] != reference_arm, ["arm", "strategy", *PAIR_KEY, *cols]]
    pairs = other.merge(base, on=["strategy", *PAIR_KEY], suffixes=("", "_ref"))
    pairs["outcome_differs"] = pairs["success"] != pairs["success_ref"]
    for col in ("diverged_at", "trigger", "trigger_turn", "trigger_in", "lag_turns"):
        pairs[col] = None
    need = pairs if divergence == "all" else pairs.loc[pairs["outcome_differs"]]
    if fetch is None or need.empty:
        return pairs
    ids = sorted(set(need["run_id"]) | set(need["run_id_ref"]))
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(ids)))) as pool:
        logs = dict(zip(ids, pool.map(fetch, ids), strict=True))
    sides = {"a": "arm", "b": "baseline" if reference_arm == "baseline" else reference_arm, "both": "both"}
    for i, row in need.iterrows():
        res = compare_logs(logs[row["run_id"]], logs[row["run_id_ref"]])
        res["trigger_in"] = sides.get(res["trigger_in"], res["trigger_in"])
        for key, value in res.items():
            pairs.at[i, key] = value
    return pairs


def attribution_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per (strategy, arm): n pairs, n outcome mismatches, and what triggered them."""
    if pairs.empty:
        return pd.DataFrame(columns=[*CELL, "n_pairs", "mismatches"])
    base = pairs.groupby(list(CELL)).agg(n_pairs=("run_id", "size"), mismatches=("outcome_differs", "sum"))
    mism = pairs.loc[pairs["outcome_differs"]]
    counts = (
        mism.groupby([*CELL, "trigger"]).size().unstack("trigger", fill_value=0)
        if not mism.empty
        else pd.DataFrame(index=base.index)
    )
    out = base.join(counts, how="left").fillna(0)
    return sort_cells(out.astype(int).reset_index().rename_axis(columns=None), ("arm", "strategy"))


def divergence_summary(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per (strategy, arm), over every pair whose logs were compared (``divergence="all"``):
    how many trajectories parted from the baseline twin, how early, and after what."""
    done = pairs.loc[pairs["trigger"].notna()] if "trigger" in pairs else pairs.iloc[0:0]
    if done.empty:
        return pd.DataFrame(columns=[*CELL, "n_compared", "n_diverged"])
    parted = done.assign(parted=done["diverged_at"].notna())
    out = parted.groupby(list(CELL)).agg(
        n_compared=("run_id", "size"),
        n_diverged=("parted", "sum"),
        median_turn=("diverged_at", lambda s: pd.to_numeric(s).median()),
    )
    counts = parted.loc[parted["parted"]].groupby([*CELL, "trigger"]).size().unstack("trigger", fill_value=0)
    out = out.join(counts, how="left").fillna({c: 0 for c in counts.columns})
    return sort_cells(out.reset_index().rename_axis(columns=None), ("arm", "strategy"))
