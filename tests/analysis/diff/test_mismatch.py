"""Divergence and its attribution: the rule on constructed event logs (a real run cannot be
made to, say, compact and drift on the same turn), then on the logs of a study the harness
wrote, checked against the definition: the calls agree before the divergent turn and differ
on it, and the trigger is the nearest compaction / truncation / drift at or before it."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.diff import mismatch
from ctxlog.reader import Log


def log(*turns, triggers=(), extra=None):
    """Event log: turn i makes the calls in turns[i]; triggers = [(turn, kind)] before that turn's calls."""
    events = [{"seq": 0, "turn": 0, "kind": "trial_start"}]
    trig = {}
    for t, k in triggers:
        trig.setdefault(t, []).append(k)
    for t, calls in enumerate(turns):
        for k in trig.get(t, []):
            events.append({"seq": len(events), "turn": t, "kind": k})
        events.append({"seq": len(events), "turn": t, "kind": "model_call", "t": {"ts": len(events)}})
        for name, args in calls:
            events.append(
                {
                    "seq": len(events),
                    "turn": t,
                    "kind": "tool_call",
                    "call_id": f"id{len(events)}",
                    "name": name,
                    "args": args,
                    "t": {"ts": 99.0 + len(events)},
                }
            )
    events.append({"seq": len(events), "turn": len(turns) - 1, "kind": "trial_end", "success": True})
    return events + (extra or [])


def same(n):
    return [[("edit", {"path": f"f{t}.py", "line": t})] for t in range(n)]


def test_identical_logs_do_not_diverge_despite_ids_timings_and_key_order():
    a = log(*same(6), triggers=[(2, "compaction")])
    b = log(*[[(name, dict(reversed(list(args.items()))))] for [(name, args)] in same(6)])
    for e in b:
        e["call_id"] = "other"
        e["t"] = {"ts": -1}
    assert mismatch.first_divergence(a, b) is None
    assert mismatch.compare_logs(a, b)["trigger"] == "no divergence"


def test_compaction_in_one_log_precedes_divergence():
    base = same(8)
    arm = same(5) + [[("edit", {"path": "f5.py", "line": 99})]] + same(8)[6:]
    res = mismatch.compare_logs(log(*arm, triggers=[(3, "compaction")]), log(*base))
    assert res == {
        "diverged_at": 5,
        "trigger": "compaction",
        "trigger_turn": 3,
        "trigger_in": "a",
        "lag_turns": 2,
    }


def test_nearest_trigger_wins_and_later_events_are_ignored():
    arm = same(6) + [[("run", {"cmd": "rm -rf shim"})]] + same(9)[7:]
    a = log(*arm, triggers=[(2, "compaction"), (4, "drift"), (8, "compaction")])
    b = log(*same(9), triggers=[(4, "drift")])
    res = mismatch.compare_logs(a, b)
    assert (res["diverged_at"], res["trigger"], res["trigger_turn"], res["trigger_in"]) == (
        6,
        "drift",
        4,
        "both",
    )


def test_divergence_on_the_trigger_turn_counts():
    arm = same(3) + [[("edit", {"path": "x", "line": 0})]] + same(5)[4:]
    res = mismatch.compare_logs(log(*arm, triggers=[(3, "context_truncation")]), log(*same(5)))
    assert (res["diverged_at"], res["trigger"], res["lag_turns"]) == (3, "context_truncation", 0)


def test_same_turn_different_kinds_names_both():
    arm = same(5) + [[("edit", {"path": "y", "line": 0})]]
    res = mismatch.compare_logs(
        log(*arm, triggers=[(4, "drift")]), log(*same(6), triggers=[(4, "compaction")])
    )
    assert (res["trigger"], res["trigger_in"]) == ("compaction+drift", "both")


def test_within_one_log_the_later_event_of_a_turn_is_nearer():
    a = log(*(same(4) + [[("edit", {"path": "z", "line": 0})]]), triggers=[(3, "drift"), (3, "compaction")])
    assert mismatch.compare_logs(a, log(*same(5)))["trigger"] == "compaction"


def test_turn_missing_from_one_log_is_a_divergence_without_trigger():
    res = mismatch.compare_logs(log(*same(4)), log(*same(6)))
    assert (res["diverged_at"], res["trigger"]) == (4, "none")


def test_turn_without_calls_differs_from_turn_with_calls():
    short = same(3) + [[]] + same(5)[4:]
    assert mismatch.first_divergence(log(*short), log(*same(5))) == 3


def test_a_missing_log_is_named():
    assert mismatch.compare_logs(log(*same(3)), None)["trigger"] == "events missing"


def test_read_log_sorts_by_seq_and_counts_a_torn_line():
    text = (
        '{"seq": 1, "turn": 0, "kind": "drift"}\n\n{"seq": 0, "turn": 0, "kind": "compaction"}\n'
        '{"seq": 2, "turn": 0, "kind": "tool_c'
    )
    log = mismatch.read_log(text)
    assert [e.kind for e in log.events] == ["compaction", "drift"] and log.unreadable == 1


def test_within_cell_counts_rep_pairs():
    t = pd.DataFrame(
        {
            "strategy": ["raw"] * 5,
            "arm": ["baseline"] * 5,
            "study": "s",
            "model": "m",
            "task_family": "f",
            "task_seed": [1, 1, 1, 2, 2],
            "rep": [0, 1, 2, 0, 1],
            "run_id": list("abcde"),
            "final_tree_sha": ["x", "x", "y", "z", "z"],
            "success": [1, 1, 0, 1, 1],
        }
    )
    row = mismatch.within_cell(t).iloc[0]
    # seed 1: 3 pairs, 2 differ (x-y twice); seed 2: 1 pair, same.
    assert (row["n_pairs"], row["tree_differs"], row["n_outcome_pairs"], row["outcome_differs"]) == (
        4,
        2,
        4,
        2,
    )
    assert row["tree_mismatch"] == pytest.approx(0.5)


def _calls_by_turn(events: list[dict]) -> dict[int, list[tuple[str, str]]]:
    """Every turn an event names (but the trial's start and end) -> its (tool, args) calls."""
    out: dict[int, list[tuple[str, str]]] = {}
    for e in events:
        if e["kind"] not in ("trial_start", "trial_end"):
            out.setdefault(e["turn"], [])
        if e["kind"] == "tool_call":
            out[e["turn"]].append((e["name"], json.dumps(e["args"], sort_keys=True)))
    return out


def _check_against_the_definition(row, logs: dict[str, Log]) -> None:
    # The definition, restated over the raw records: an oracle apart from mismatch's typed reading.
    a, b = logs[row.run_id].records(), logs[row.run_id_ref].records()
    ca, cb = _calls_by_turn(a), _calls_by_turn(b)
    at = int(row.diverged_at)
    assert all(ca.get(t) == cb.get(t) for t in range(at)), f"{row.run_id}: calls differ before turn {at}"
    assert ca.get(at) != cb.get(at), f"{row.run_id}: no difference at turn {at}"
    triggers = [
        (e["turn"], e["kind"]) for e in a + b if e["kind"] in mismatch.TRIGGER_KINDS and e["turn"] <= at
    ]
    if row.trigger == "none":
        assert not triggers
    else:
        nearest = max(t for t, _ in triggers)
        assert row.trigger_turn == nearest and row.lag_turns == at - nearest
        assert set(row.trigger.split("+")) <= {k for t, k in triggers if t == nearest}


@pytest.fixture(scope="module")
def logs(runs):
    fetch = mismatch.mlflow_event_fetcher(
        runs.tracking_uri, dict(zip(runs.trials["run_id"], runs.trials["artifact_uri"], strict=True))
    )
    return {run_id: fetch(run_id) for run_id in runs.trials["run_id"]}


def test_cross_arm_downloads_only_outcome_mismatches_and_attributes_them(runs, logs):
    fetched = []

    def fetch(run_id):
        fetched.append(run_id)
        return logs[run_id]

    pairs = mismatch.cross_arm(runs.trials, "baseline", fetch)
    need = pairs[pairs["outcome_differs"]]
    # Only trials of outcome-differing pairs are downloaded, each once.
    assert sorted(fetched) == sorted(set(need["run_id"]) | set(need["run_id_ref"]))
    for row in need.itertuples():
        _check_against_the_definition(row, logs)
        assert row.trigger_in in (None, "arm")  # the baseline arm has no compaction, truncation or drift
    summary = mismatch.attribution_summary(pairs)
    assert summary["mismatches"].sum() == len(need)
    for trigger, n in need["trigger"].value_counts().items():  # one column per trigger found
        assert summary[trigger].sum() == n


def test_cross_arm_all_pairs_compares_every_trajectory(runs, logs):
    pairs = mismatch.cross_arm(runs.trials, "baseline", logs.__getitem__, divergence="all")
    assert len(pairs) == len(runs.trials) // 2 and pairs["trigger"].notna().all()
    diverged = pairs[pairs["diverged_at"].notna()]
    assert len(diverged) > 0
    for row in diverged.itertuples():
        _check_against_the_definition(row, logs)
    # The harness is deterministic: the same calls build the same tree, so outcomes part only
    # where trajectories do.
    assert (pairs["diverged_at"].notna() | ~pairs["outcome_differs"]).all()
    summary = mismatch.divergence_summary(pairs)
    assert summary["n_compared"].sum() == len(pairs)
    assert summary["n_diverged"].sum() == len(diverged)
    # Window pressure and drift are what part trajectories in this study.
    assert {"compaction", "context_truncation", "drift"} & set(diverged["trigger"])
    with pytest.raises(ValueError):
        mismatch.cross_arm(runs.trials, "baseline", logs.__getitem__, divergence="some")


def test_within_cell_on_the_study_pairs_every_rep(runs):
    row = mismatch.within_cell(runs.trials)
    assert len(row) == len(runs.trials.groupby(["strategy", "arm"]))
    # 2 reps of 2 seeds: one rep pair per seed and cell.
    assert (row["n_pairs"] == runs.trials["task_seed"].nunique()).all()
    assert (row["tree_differs"] <= row["n_pairs"]).all()
