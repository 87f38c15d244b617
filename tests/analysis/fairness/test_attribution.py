"""The attribution table: the share of a comparison's difference that goes when a switch is off."""

from __future__ import annotations

import itertools
import math

import pandas as pd

from analysis.fairness import attribution


def trials(
    outcome, points=("ablation=none", "ablation=temptation", "ablation=tree"), study="x"
) -> pd.DataFrame:
    rows = []
    for s, a, p, k in itertools.product(("raw", "ledger", "compaction"), ("drift",), points, range(10)):
        if p == "ablation=tree" and s != "ledger":
            continue  # only ledger has the switch; the others are not run under it
        rows.append(
            {
                "study": study,
                "model": "sim",
                "task_family": "f",
                "task_seed": k,
                "rep": 0,
                "sensitivity_point": p,
                "strategy": s,
                "arm": a,
                "success": int(outcome(s, p, k)),
            }
        )
    return pd.DataFrame(rows)


def test_shares_gone_per_switch_with_stand_ins_for_channels_a_strategy_lacks():
    def outcome(s, p, k):
        if s == "raw":  # raw loses 6 of 10 to traps; without temptation none
            return 1 if p == "ablation=temptation" or k >= 6 else 0
        if s == "ledger":  # ledger's edge is its TREE: without it, ledger is raw under none
            return 1 if p != "ablation=tree" or k >= 6 else 0
        return 1 if p == "ablation=temptation" or k >= 3 else 0  # compaction: 3 lost, to traps

    t = attribution.table(trials(outcome)).set_index(["comparison", "switched off"])
    led = t.loc[("ledger - raw", "tree")]
    assert (led["D (all on)"], led["D (off)"], led["share gone"], led["n_pairs"]) == (0.6, 0.0, 1.0, 10)
    assert t.loc[("ledger - raw", "temptation"), "share gone"] == 1.0  # with no traps, no edge
    assert t.loc[("compaction - raw", "temptation"), "share gone"] == 1.0
    # compaction has no TREE: under `tree` it stands in with its `none` trials, as does raw
    assert t.loc[("compaction - raw", "tree"), "share gone"] == 0.0
    # ... which the table says, so a 0 by construction is not read as a finding
    assert t.loc[("compaction - raw", "tree"), "ran under it"] == "neither: 0 by construction"
    assert t.loc[("ledger - raw", "tree"), "ran under it"] == "ledger"
    assert t.loc[("ledger - raw", "temptation"), "ran under it"] == "ledger raw"


def test_none_from_another_study_pairs_on_the_task_and_no_difference_is_nan():
    on = trials(lambda s, p, k: 1, points=("",), study="after")
    off = trials(lambda s, p, k: 1, points=("ablation=temptation",), study="attribution")
    t = attribution.table(pd.concat([on, off]))
    assert len(t) == 2 and (t["n_pairs"] == 10).all() and t["share gone"].map(math.isnan).all()


def test_stand_ins_count_only_the_tasks_the_switch_was_run_on():
    on = trials(lambda s, p, k: 1, points=("",))
    off = trials(lambda s, p, k: 1, points=("ablation=tree",))
    off = off[off["task_seed"] < 4]  # the switch ran on 4 of the 10 seeds
    t = attribution.table(pd.concat([on, off]))
    assert set(t["n_pairs"]) == {4}


def test_a_switch_that_turns_a_channel_on_reads_with_the_channel_as_all_on():
    # ledger's edge comes only with harness-written invariants (switched ON by its ablation,
    # off under `none`): with the channel its difference is 0.6, without it 0, so all of it goes
    def outcome(s, p, k):
        if s == "ledger" and p == "ablation=harness_invariants":
            return 1
        return 1 if k >= 6 else 0

    t = attribution.table(trials(outcome, points=("ablation=none", "ablation=harness_invariants")))
    led = t.set_index(["comparison", "switched off"]).loc[("ledger - raw", "harness_invariants")]
    assert (led["D (all on)"], led["D (off)"], led["share gone"]) == (0.6, 0.0, 1.0)
