"""A replay repeats what its real trial was run with beyond the cell: the task's other size knobs
and the limits (issue 21: a real pilot with limits.max_turns=4 and task.size.filler=0 was replayed
with the defaults, 240 turns and filler 5, so the sim's 16 turns met the real trials' 2)."""

from __future__ import annotations

import pandas as pd

from analysis.calibrate.fidelity import plan


def test_the_replay_repeats_the_limits_and_the_size():
    real = pd.DataFrame(
        [
            {
                "strategy": s,
                "arm": "baseline",
                "task_family": "signature_migration",
                "task_seed": 1,
                "rep": 0,
                "steps": 6,
                "task.size.filler": 0,
                "limits.max_turns": 4.0,
                "limits.max_turns_per_step": "4",
                "task.size.callers": None,
                "limits.trial_timeout_s": None,
            }
            for s in ("raw", "ledger")
        ]
    )
    (cmd,) = plan(real, "sim_x", "fid", [])
    assert (
        "++task.size.filler=0" in cmd
        and "++limits.max_turns=4" in cmd
        and "++limits.max_turns_per_step=4" in cmd
    )
    assert not any("callers" in c or "trial_timeout_s" in c for c in cmd)
    assert "strategy=ledger,raw" in cmd
