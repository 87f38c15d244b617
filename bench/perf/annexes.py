"""What each annex buys (docs/scaling.md §9, "The annexes"): a small fixed slice of the grid run
with every annex on, and again with each annex switched off alone, measured as the grid figure
is measured (bench/perf/grid.py: wall, and CPU split harness / the study's containers / the
engine). The variants run round by round, each round in the same order, so what else loads
the machine falls on every variant alike; each figure is the median over the rounds with its
range, beside the trials it is from.

The slice is every strategy x arm cell of the grid's three families for the first `seeds` task
seeds: the check cache's hits come from the cells of one seed, so a slice of fewer cells would
hide what it buys.

    python -m bench.perf.annexes                      # 1 seed (48 trials) x 6 variants x 3 rounds
    python -m bench.perf.annexes --rounds 1 --seeds 2
    python -m bench.perf.annexes --rounds 2 --slice task=config_rename --slice ++task.size.steps=6  # 16 trials a run

Each variant names its switch: the sandbox's three (`ANNEX_SWITCHES`), the compose cache (the
ctxbench sweeper; off: Hydra's basic sweeper), and kept tasks and answers (`task.kept`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.perf.grid import grid_run

SLICE_SEEDS = 1  # 3 families x 16 cells = 48 trials a run
ROUNDS = 3
ALL_ON = "all on"


def variants() -> dict[str, dict[str, Any]]:
    """Each variant's overrides of `experiment=grid`: all on, then each annex off alone."""
    off: dict[str, tuple[str, ...]] = {
        "check cache": ("sandbox.check_cache=false",),
        "sandbox reuse + pristine probe": ("sandbox.reuse=false",),
        "fast git (gitmemo, libgit, gittree, scratch)": ("sandbox.fast_git=false",),
        "compose cache (ctxbench sweeper)": ("hydra/sweeper=basic",),
        "kept tasks and answers": ("task.kept=false",),
    }
    return {ALL_ON: {"overrides": ()}} | {annex: {"overrides": o} for annex, o in off.items()}


def _cpu(run: dict[str, Any], part: str) -> float | None:
    return run["cpu_s_per_trial"].get(part)


MEASURES: dict[str, Callable[[dict[str, Any]], float | None]] = {
    # the slice's wall over its trials, the study's start included (every variant pays it)
    "wall_s_per_trial": lambda r: round(r["wall_s"] / r["trials"], 3),
    "harness_cpu_s_per_trial": lambda r: _cpu(r, "harness"),
    "containers_cpu_s_per_trial": lambda r: _cpu(r, "containers"),
    "engine_cpu_s_per_trial": lambda r: _cpu(r, "engine"),
}


def summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per variant and measure: median, min and max over the rounds, the rounds (n) and the
    trials a round ran; and the median's ratio to all-on's (what switching the annex off costs)."""
    out: dict[str, dict[str, Any]] = {}
    for name, rounds in runs.items():
        row: dict[str, Any] = {"n": len(rounds), "trials": sorted({r["trials"] for r in rounds})}
        for measure, read in MEASURES.items():
            xs = [x for x in map(read, rounds) if x is not None]
            row[measure] = (
                {"median": round(statistics.median(xs), 3), "min": min(xs), "max": max(xs)} if xs else None
            )
        out[name] = row
    base = out.get(ALL_ON)
    for row in out.values():
        row["vs_all_on"] = {
            m: (
                round(row[m]["median"] / base[m]["median"], 2)
                if base and row[m] and base[m] and base[m]["median"]
                else None
            )
            for m in MEASURES
        }
    return out


def annexes_run(
    tmp: Path,
    seeds: int = SLICE_SEEDS,
    rounds: int = ROUNDS,
    n_jobs: int = 2,
    only: tuple[str, ...] = (),
    slice_overrides: tuple[str, ...] = (),
    runner: Callable[..., dict[str, Any]] = grid_run,
) -> dict[str, Any]:
    """Each variant (`only`: those named) `rounds` times, round by round; `slice_overrides`
    shrink the slice further (tests)."""
    chosen = {k: v for k, v in variants().items() if not only or k in only}
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in chosen}
    for i in range(rounds):
        for j, (name, v) in enumerate(chosen.items()):
            print(f"  round {i + 1}/{rounds}: {name if name == ALL_ON else name + ' off'} ...", flush=True)
            where = tmp / f"round{i}-variant{j}"
            run = runner(where / "results", False, n_jobs, seeds, (*v["overrides"], *slice_overrides))
            runs[name].append(run)
            shutil.rmtree(where / "results", ignore_errors=True)  # a round's store: only its figures stay
    return {
        "seeds": seeds,
        "rounds": rounds,
        "n_jobs": n_jobs,
        "slice_overrides": list(slice_overrides),
        "variants": {k: {"overrides": list(v["overrides"])} for k, v in chosen.items()},
        "summary": summary(runs),
        "runs": {
            k: [{m: read(r) for m, read in MEASURES.items()} | {"trials": r["trials"]} for r in rs]
            for k, rs in runs.items()
        },
    }


def _cell(x: dict[str, Any] | None) -> str:
    return "unreadable" if x is None else f"{x['median']:g} ({x['min']:g}-{x['max']:g})"


def text(report: dict[str, Any]) -> str:
    """One line per variant: each measure as median (min-max), and off/on of the medians."""
    s = report["summary"]
    head = (
        "annex switched off alone",
        "n x trials",
        *(m.replace("_per_trial", "") for m in MEASURES),
        "wall, harness x all-on",
    )
    rows = [
        (
            k,
            f"{v['n']} x {'/'.join(map(str, v['trials']))}",
            *(_cell(v[m]) for m in MEASURES),
            " / ".join(
                f"x{r:g}" if r is not None else "-"
                for r in (v["vs_all_on"]["wall_s_per_trial"], v["vs_all_on"]["harness_cpu_s_per_trial"])
            ),
        )
        for k, v in s.items()
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    shrunk = f" ({' '.join(report['slice_overrides'])})" if report["slice_overrides"] else ""
    return (
        f"what each annex buys: the grid's slice of {report['seeds']} seed(s), every strategy x arm cell{shrunk}, "
        f"{report['n_jobs']} workers, each annex off alone against all on; median (min-max) over "
        f"{report['rounds']} round(s), s per trial\n"
        + "\n".join([line(head), "  ".join("-" * w for w in widths), *map(line, rows)])
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perf.annexes", description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=SLICE_SEEDS, help="task seeds of the slice (48 trials each)")
    p.add_argument("--rounds", type=int, default=ROUNDS)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--only", action="append", default=[], help="a variant's name (repeatable)")
    p.add_argument(
        "--slice",
        action="append",
        default=[],
        help="one more override shrinking the slice (e.g. task=config_rename: its 16 cells; repeatable)",
    )
    p.add_argument("--out", type=Path, default=None, help="write the report as JSON here too")
    a = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ctxbench-annexes-"))
    try:
        report = annexes_run(tmp, a.seeds, a.rounds, a.n_jobs, tuple(a.only), tuple(a.slice))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n" + text(report))
    if a.out:
        a.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
