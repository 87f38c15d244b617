"""The exploration rates read back from event logs."""

from __future__ import annotations

import json

from analysis.calibrate import explore_rates


def call(name, **args):
    return {"name": name, "args": args}


def log(tmp_path, steps):
    lines = []
    for turns in steps:
        lines.append({"kind": "step_start"})
        lines += [{"kind": "model_call", "purpose": "turn", "tool_calls": t} for t in turns]
    p = tmp_path / "events.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return p


def test_rates_count_looks_range_checks_and_rereads(tmp_path):
    p = log(
        tmp_path,
        [
            [
                [call("git", subcommand="log", args=["--stat", "-n", "5"])],
                [call("read_file", path="a.py")],
                [call("edit_file", path="a.py")],
            ],
            [
                [call("git", subcommand="log", args=["--stat", "abc..HEAD"])],
                [call("read_file", path="a.py")],
                [call("edit_file", path="a.py")],
            ],  # a.py seen before, re-read before its edit
            [[call("edit_file", path="a.py")]],  # no look, no re-read
        ],
    )
    assert explore_rates.rates([p]) == {
        "p_look_history": (1, 3),
        "p_check_changes": (1, 2),
        "p_reread_before_edit": (1, 2),
    }
    assert explore_rates.main([]) == 2
