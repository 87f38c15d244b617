"""A digest of every generated task, kept as test data so a change to how tasks are written
(templates, the oracle's base) can show it changed no byte of what is generated.

    PYTHONPATH=. python -m tests.tasks.digests --write   # record tests/tasks/data/task_digests.json
    PYTHONPATH=. python -m tests.tasks.digests           # compare; prints what differs

Per task (every family x seeds 0..49 x the sizes below): the files, the statement, the steps,
the checks, the drift commits' contents and the rest of the TaskSpec, and the oracle's answers
along a replay of the task with and without drift: at each step its StepPlan from the full
files, from nothing (what it asks to read) and from the narrow view of the step, the tidy-ups
the full files invite in the step's paths and those the step's edits invite (what the simulated
model is offered). Each part is digested apart, so a difference names the part.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from tasks import FAMILIES, fresh
from tasks.spec import TaskSpec
from tests.helpers.task_replay import apply_drift, apply_plan, invitations, narrow

DATA = Path(__file__).resolve().parent / "data" / "task_digests.json"
SEEDS = range(50)
# conf/task/*.yaml and conf/experiment/*.yaml use each family's defaults ({}); the others are the
# sizes the replay tests use (tests/tasks/test_replay.py): the fewest steps, the most, many callers.
SIZES: tuple[dict[str, int], ...] = (
    {},
    {"steps": 6},
    {"steps": 16, "callers": 30, "filler": 0},
    {"callers": 40},
)


def _digest(value: object) -> str:
    return hashlib.sha256(repr(value).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _oracle_answers(spec: TaskSpec, drift: bool) -> Iterator[object]:
    files = dict(spec.files)
    for step in spec.steps:
        for d in spec.drift if drift else ():
            if d.before_step == step.id:
                apply_drift(files, d)
        plan = spec.oracle.edits_for(step.id, files)
        view = narrow(spec, step.id, files)
        yield (
            step.id,
            plan,
            spec.oracle.edits_for(step.id, {}),
            spec.oracle.edits_for(step.id, view),
            spec.oracle.cleanups(files, step.touches),
            invitations(spec, step.id, files, plan),
        )
        apply_plan(files, plan)
    yield ("final", tuple(sorted(files.items())))


def task_digest(spec: TaskSpec) -> dict[str, str]:
    return {
        "files": _digest(spec.files),
        "statement": _digest((spec.task_id, spec.title, spec.text, spec.test_command, spec.protected)),
        "steps": _digest(spec.steps),
        "checks": _digest((spec.final_check, spec.invariants, [s.check for s in spec.steps])),
        "drift": _digest(spec.drift),
        "rest": _digest((spec.traps, spec.harmless, spec)),
        "oracle": _digest(list(_oracle_answers(spec, False))),
        "oracle_drift": _digest(list(_oracle_answers(spec, True))),
    }


def key(family: str, seed: int, size: dict[str, int]) -> str:
    return "/".join([family, str(seed), *(f"{k}={size[k]}" for k in sorted(size))])


def cases(seeds: range = SEEDS) -> Iterator[tuple[str, int, dict[str, int]]]:
    for family in FAMILIES:
        for size in SIZES:
            for seed in seeds:
                yield family, seed, size


def compute(seeds: range = SEEDS) -> dict[str, dict[str, str]]:
    return {key(f, s, z): task_digest(fresh(f, s, **z)) for f, s, z in cases(seeds)}


def differences(got: dict[str, dict[str, str]], want: dict[str, dict[str, str]]) -> list[str]:
    out = [f"{k}: not recorded" for k in sorted(set(got) - set(want))]
    for k in sorted(set(got) & set(want)):
        out += [f"{k}: {part} differs" for part in want[k] if got[k].get(part) != want[k][part]]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the digests instead of comparing")
    args = parser.parse_args(argv)
    got = compute()
    if args.write:
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n")
        print(f"{len(got)} task digests written to {DATA}")
        return 0
    diff = differences(got, json.loads(DATA.read_text()))
    print("\n".join(diff[:50]) or f"{len(got)} tasks: every digest as recorded")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
