"""The sim's exploration rates (SimParams, bench/sim/params.py), measured from any model's event logs.

A real agent's logs say how often it looks before acting; these are the shares the sim's
three parameters stand for (bench/sim/explore.py), read from `step_start` and `model_call`:

  p_look_history        steps whose first turn runs `git log` without a range
  p_check_changes       steps, after one in which a `git log` ran, whose first turn runs
                        `git log <commit>..HEAD`
  p_reread_before_edit  (step, file) pairs where the file was seen in an earlier step and is
                        read again in this step before its first edit

These are observable shares, not the parameters themselves: in the sim other causes add to
them (a re-read also follows a drift cue or a failure; `p_check_changes` applies only while the
earlier `git log` is still in view, which ledger and subagent drop at every step). Measured on
the sim's own logs (issue-22 slice, raw, baseline arm, rates set 0.3 / 0.5 / 0.5): 0.21, 0.40,
0.94. So calibrate by matching shares -- run the sim at candidate rates, read its logs with this
module, and pick the rates whose shares match the real model's -- not by copying a share into
bench/sim/params.py.

`p_edit_error` is not measured here: telling a competence slip from a context failure needs
the ground truth of the task (traps, drift), which analysis/calibrate owns.

    python -m analysis.calibrate.explore_rates results/trials/*/events.jsonl
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from ctxlog import events as ev
from ctxlog.reader import Log

EDITS = ("edit_file", "write_file", "delete_file")


def _git_log(call: dict) -> str | None:
    args = call.get("args") or {}
    if call.get("name") != "git" or args.get("subcommand") != "log":
        return None
    return "range" if any(".." in str(x) for x in args.get("args") or ()) else "plain"


def rates(logs: Iterable[Path]) -> dict[str, tuple[int, int]]:
    """(hits, chances) per parameter over the given event logs."""
    out = {"p_look_history": [0, 0], "p_check_changes": [0, 0], "p_reread_before_edit": [0, 0]}
    for path in logs:
        steps: list[list[ev.ModelCall]] = []  # per step, its model calls
        for e in Log.from_path(Path(path), strict=True).events:  # the one reader (ctxlog/reader.py)
            if isinstance(e, ev.StepStart):
                steps.append([])
            elif isinstance(e, ev.ModelCall) and e.purpose == "turn" and steps:
                steps[-1].append(e)
        seen: set[str] = set()
        looked = False
        for calls in steps:
            if not calls:
                continue
            first = [_git_log(c) for c in calls[0].tool_calls or ()]
            out["p_look_history"][0] += "plain" in first
            out["p_look_history"][1] += 1
            if looked:
                out["p_check_changes"][0] += "range" in first
                out["p_check_changes"][1] += 1
            looked = looked or any(_git_log(c) for r in calls for c in r.tool_calls or ())
            read, mine = set(), set()
            for r in calls:
                for c in r.tool_calls or ():
                    p = str((c.get("args") or {}).get("path", ""))
                    if c.get("name") == "read_file":
                        read.add(p)
                    elif c.get("name") in EDITS and p in seen and p not in mine:
                        mine.add(p)
                        out["p_reread_before_edit"][0] += p in read
                        out["p_reread_before_edit"][1] += 1
            seen |= {
                str((c.get("args") or {}).get("path", ""))
                for r in calls
                for c in r.tool_calls or ()
                if c.get("name") in ("read_file", *EDITS)
            }
    return {k: (v[0], v[1]) for k, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        print("analysis.calibrate.explore_rates: give event logs (events.jsonl)", file=sys.stderr)
        return 2
    for name, (hits, n) in rates(paths).items():
        print(f"{name}: {hits}/{n}" + (f" = {hits / n:.3f}" if n else " (no chances)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
