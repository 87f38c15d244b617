"""``python -m analysis.sensitivity``: a sensitivity study's "which conclusions survive" table.

    python -m analysis.sensitivity sensitivity --tracking-uri sqlite:///results/mlflow.db -o table.md

The table is analysis/sensitivity/survive.py (also a section of the study's report); the
default tracking URI comes from analysis.settings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.load import load_runs
from analysis.render import emit
from analysis.sensitivity.survive import section
from analysis.settings import defaults


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m analysis.sensitivity",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("study", help="the sensitivity study's name (study.name)")
    ap.add_argument("--tracking-uri", default=None)
    ap.add_argument("--experiment", default="ctxbench")
    ap.add_argument("-o", "--out", type=Path, default=None, help="write the section here (markdown)")
    args = ap.parse_args(argv)
    uri = args.tracking_uri
    if uri is None:
        uri = str(defaults()["tracking.uri"])
    runs = load_runs(uri, args.experiment, args.study, curves=False)
    text = section(runs.trials) if not runs.empty else ""
    if not text:
        print(
            f"analysis.sensitivity: no trials with a sensitivity point in study {args.study!r} at {uri}",
            file=sys.stderr,
        )
        return 1
    emit(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
