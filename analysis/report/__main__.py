"""``python -m analysis.report [key=value ...]``: regenerate the study report.

Keys: tracking.uri, tracking.experiment, study (or study.name), report.dir,
report.reference (strategy, default raw), report.reference_arm (default baseline),
report.mlflow (log back to the study's parent run, default true), report.divergence
(outcome: locate the divergent turn only for outcome mismatches, the default; all: for
every pair vs baseline, which downloads every event log). Defaults: `analysis.settings`.

Writes <report.dir>/index.md, index.html (plots inlined), figures/*.png and
tables/*.csv, and logs the headline numbers and the report itself to the study's
MLflow parent run. Exit code 1, with a message, when there is nothing to analyse.
"""

from __future__ import annotations

import argparse
import sys

from analysis.load import Runs, labels, load_runs
from analysis.report.build import generate
from analysis.settings import REPO, defaults

KEYS = (
    "tracking.uri",
    "tracking.experiment",
    "study.name",
    "report.dir",
    "report.reference",
    "report.reference_arm",
    "report.mlflow",
    "report.divergence",
)
ALIASES = {"study": "study.name", "tracking_uri": "tracking.uri", "experiment": "tracking.experiment"}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m analysis.report", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="key=value",
        help=f"keys: {', '.join(KEYS)}; study=NAME for study.name (defaults: analysis.settings)",
    )
    return p


def parse_overrides(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for arg in argv:
        key, sep, value = arg.lstrip("+").partition("=")
        key = ALIASES.get(key, key)
        if not sep or key not in KEYS:
            raise SystemExit(
                f"analysis.report: unknown argument {arg!r}; use key=value with key in "
                f"{', '.join(KEYS)} (or study=NAME)"
            )
        out[key] = value
    return out


def _no_runs_message(
    uri: str, experiment: str, study: str | None, runs: Runs | None, reason: str = ""
) -> str:
    where = f"experiment {experiment!r}" + (f", study {study!r}" if study else "") + f" at {uri}"
    msg = f"analysis.report: no finished ctxbench trials to analyse in {where}"
    notes = [reason] if reason else []
    if runs is not None:
        notes += runs.notes
        if not runs.excluded.empty:
            counts = runs.excluded["mlflow_status"].value_counts().to_dict()
            notes.append(f"only unfinished trials found: {counts}")
    msg += " (" + "; ".join(notes) + ")." if notes else "."
    return (
        msg + " Run a study first (python -m bench -m experiment=grid) or pass tracking.uri=... / study=..."
    )


def main(argv: list[str] | None = None) -> int:
    cfg = defaults()
    cfg.update(parse_overrides(parser().parse_args(sys.argv[1:] if argv is None else argv).overrides))

    def key(name: str, fallback: str) -> str:
        return cfg.get(name) or fallback

    uri, experiment, study = (
        key("tracking.uri", ""),
        key("tracking.experiment", "ctxbench"),
        cfg["study.name"] or None,
    )
    runs = load_runs(uri, experiment, study)
    if runs.empty:
        print(_no_runs_message(uri, experiment, study, runs), file=sys.stderr)
        return 1
    rep = generate(
        uri,
        experiment,
        study,
        key("report.dir", str(REPO / "results" / "report")),
        reference=key("report.reference", "raw"),
        reference_arm=key("report.reference_arm", "baseline"),
        log_mlflow=key("report.mlflow", "true").lower() not in ("0", "false", "no"),
        runs=runs,
        divergence=key("report.divergence", "outcome"),
    )
    assert rep is not None
    t = rep.analysis.runs.trials
    levels = labels.headed("strategies", rep.analysis.level)
    print(
        f"analysis.report: {len(t)} trials ({t['strategy'].nunique()} {levels} × {t['arm'].nunique()} arms), "
        f"{len(rep.analysis.runs.excluded)} excluded, "
        f"{len(rep.pages.mismatch) + len(rep.pages.reps) if rep.pages else 0} diff pages "
        f"-> {rep.out_dir / 'index.html'} "
        f"in {rep.seconds:.1f}s"
        + (
            f"; logged to parent run {rep.logged_to}"
            if rep.logged_to
            else "; not logged to MLflow (no single study parent run; pass study=NAME)"
            if t["study"].nunique() > 1 or rep.analysis.runs.studies.empty
            else ""
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
