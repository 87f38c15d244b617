"""Look at a generated task: `python -m tasks.show <family> <seed> [knob=value ...]`.

Prints the task statement, plan (touches, checks, invariants each step establishes), traps,
drift schedule and final check, plus sizes: the base repository and the file content a
competent engineer reads and writes over the plan (the oracle replayed on the true files),
in tokens. `--files` also dumps the repository; `--file PATH` one file.
"""

from __future__ import annotations

import argparse
import sys

from tasks import FAMILIES, generate
from tasks.common.build import apply_edit
from tasks.spec import TaskSpec


def _count(text: str) -> int:
    try:  # the project's BPE counter, when tiktoken is installed
        from bench.core.tokens import count_text

        return count_text(text)
    except Exception:  # noqa: BLE001 - any missing dependency: fall back to an estimate
        return len(text) // 4


def workload(spec: TaskSpec) -> tuple[int, int, list[int]]:
    """(total, largest step, per step): tokens of the files each step reads plus every file
    its edits write back, the oracle replayed on the true files without drift."""
    files = dict(spec.files)
    per_step, largest = [], 0
    for step in spec.steps:
        needs = spec.oracle.edits_for(step.id, {}).reads
        tokens = sum(_count(files[p]) for p in needs if p in files)
        for edit in spec.oracle.edits_for(step.id, files).edits:
            apply_edit(files, edit)
            tokens += _count(files.get(edit.path, ""))
        largest = max(largest, sum(_count(files[p]) for p in {*needs, *step.touches} if p in files))
        per_step.append(tokens)
    return sum(per_step), largest, per_step


def render(spec: TaskSpec) -> str:
    out = [
        f"[task:{spec.task_id}] {spec.title}",
        "",
        spec.text,
        "",
        f"Test command: `{spec.test_command}`",
        f"Protected (read-only for the agent): {', '.join(spec.protected)}",
        "",
        "INVARIANTS (plan time)",
    ]
    out += [
        f"  [inv:{i.id}] {i.text}" + (f"\n      check: {i.check}" if i.check else "") for i in spec.invariants
    ]
    out += ["", "PLAN"]
    for s in spec.steps:
        out += [
            f"  [step:{s.id}] {s.title}",
            f"      {s.instructions}",
            f"      touches: {', '.join(s.touches)}",
            f"      check:   {s.check}",
        ]
        out += [
            f"      establishes [inv:{i.id}]{f' (until {i.until})' if i.until else ''}: {i.text}"
            for i in s.establishes
        ]
    out += ["", "TRAPS (tidy-ups that pass where they are done and fail a later check)"]
    out += [
        f"  [trap:{t.id}] {t.path}: {t.description}\n      cleanup {t.cleanup}; protected by "
        + (f"[inv:{t.protected_by}]" if t.protected_by else f"only the {t.drift} commit message")
        + f"; caught by {t.caught_by}'s check"
        for t in spec.traps
    ]
    out += ["", "DRIFT (committed by the harness only when arm.drift is on)"]
    for d in spec.drift:
        out += [
            f'  before {d.before_step}  {d.kind:<13} {d.id}: "{d.message}" by {d.author}',
            f"      {d.description}",
            "      files: " + ", ".join(p + ("" if c is not None else " (deleted)") for p, c in d.files),
        ]
    out += ["", "FINAL CHECK", f"  {spec.final_check}", "", sizes(spec)]
    return "\n".join(out)


def sizes(spec: TaskSpec) -> str:
    """Token sizes: what the compaction arm's ~7.9k budget has to hold, and for how long."""
    total, largest, per_step = workload(spec)
    repo = sum(_count(c) for _, c in spec.files)
    rows = [f"  {s.id}  {n:>6}  {s.title}" for s, n in zip(spec.steps, per_step, strict=True)]
    return "\n".join(
        [
            "SIZES (tokens)",
            f"  repository: {len(spec.files)} files, {repo} tokens",
            "  file content read + written back, per step (the oracle on the true files):",
            *rows,
            f"  total {total}; largest step's files {largest}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks.show", description=__doc__.splitlines()[0])
    parser.add_argument("family", help=f"one of {', '.join(FAMILIES)}, or a plug-in's")
    parser.add_argument("seed", type=int)
    parser.add_argument("size", nargs="*", help="size knobs, e.g. steps=8 callers=10")
    parser.add_argument("--files", action="store_true", help="also print every file of the repository")
    parser.add_argument("--file", action="append", default=[], help="also print this file")
    args = parser.parse_args(argv)
    try:
        size = {k: int(v) for k, v in (kv.split("=", 1) for kv in args.size)}
        spec = generate(args.family, args.seed, **size)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render(spec))
    files = dict(spec.files)
    for path in list(files) if args.files else args.file:
        print(f"\n===== {path}\n{files.get(path, '(no such file)')}", end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
