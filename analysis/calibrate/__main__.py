"""python -m analysis.calibrate TARGET... --name NAME  (docs/calibration.md)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from analysis.calibrate import CONF, REPO, calibrate
from analysis.calibrate.likelihood import SHAPE


def results_dir() -> Path:
    return Path(os.environ.get("CTXBENCH_RESULTS") or REPO / "results")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.calibrate", description=__doc__)
    ap.add_argument(
        "targets", nargs="+", help="study names, MLflow run ids, event logs or directories of them"
    )
    ap.add_argument("--name", required=True, help="writes conf/model/sim_NAME.yaml (model=sim_NAME)")
    ap.add_argument(
        "--base", default="sim", help="model config to inherit from and take priors from (default sim)"
    )
    ap.add_argument(
        "--free",
        action="append",
        default=[],
        choices=SHAPE,
        help="also fit this shape parameter of the recall curve (repeatable)",
    )
    ap.add_argument(
        "--match",
        choices=("exact", "words"),
        default="exact",
        help="how a summary sentence counts as keeping a fact (words: for real summarisers, which reword)",
    )
    ap.add_argument(
        "--crn",
        choices=("auto", "on", "off"),
        default="auto",
        help="one observation per random draw (auto: on when the trials were played by the sim)",
    )
    ap.add_argument("--tracking-uri", default=None)
    ap.add_argument("--experiment", default="ctxbench")
    ap.add_argument(
        "--conf-dir", type=Path, default=CONF, help="where sim_NAME.yaml goes (default conf/model)"
    )
    ap.add_argument(
        "--report-dir",
        type=Path,
        default=None,
        help="default: $CTXBENCH_RESULTS/calibration/NAME (or results/calibration/NAME)",
    )
    args = ap.parse_args(argv)
    if not args.name.replace("_", "").isalnum():
        ap.error("--name: letters, digits and underscores only (it becomes a config name)")
    from analysis.calibrate.report import figure, markdown
    from analysis.calibrate.sources import load
    from analysis.calibrate.write import write

    uri = args.tracking_uri
    if uri is None:
        from analysis.settings import defaults

        uri = str(defaults()["tracking.uri"])
    trials = load(args.targets, uri, args.experiment)
    crn = {"auto": None, "on": True, "off": False}[args.crn]
    cal = calibrate(trials, args.name, base=args.base, free=args.free, match=args.match, crn=crn)
    report_dir = args.report_dir or results_dir() / "calibration" / args.name
    command = "python -m analysis.calibrate " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    conf, _ = write(cal, args.conf_dir, report_dir, command)
    figure(cal, report_dir / "fit.png")
    (report_dir / "fit.md").write_text(markdown(cal, conf, command))
    fitted = sum(1 for e in cal.estimates.values() if e.low is not None)
    print(
        f"calibrated sim_{args.name} on {len(trials)} trials: {fitted} parameters fitted, "
        f"{len(cal.estimates) - fitted} kept their prior"
    )
    print(f"config: {conf}  (model=sim_{args.name})")
    print(f"report: {report_dir / 'fit.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
