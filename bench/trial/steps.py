"""What the harness does at step boundaries: drift commits, reading the step head fresh,
recording standing invariants and what a step taught. Certifying a step is certify.py."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable

from bench.core.render import content_sha, invariant_line
from bench.eventlog.writer import EventLog
from bench.sandbox.base import Sandbox
from ctxlog import events as ev
from strategies.base import StepHead
from tasks.spec import Invariant, Step, TaskSpec

AGENT_AUTHOR = "ctxbench agent <agent@ctxbench.invalid>"
FAILURE_TAIL_CHARS = 1500
NOTES_CAP_CHARS = 600
LEARNED_CAP = 24  # learned invariants kept; the oldest model-written notes go first


def apply_drift(
    task: TaskSpec,
    step: Step,
    sandbox: Sandbox,
    log: EventLog,
    turn: int,
    protected: Callable[[Iterable[tuple[str, str | None]]], None],
) -> int:
    """Commit every drift scheduled before `step` as its outside author; `protected` hears of
    the files it writes (the harness's own copy of protected files follows them). Returns how many."""
    n = 0
    for d in task.drift:
        if d.before_step != step.id:
            continue
        protected(d.files)
        for path, content in d.files:
            if content is None:
                sandbox.delete_file(path)
            else:
                sandbox.write_file(path, content)
        sha = sandbox.commit(d.message, d.author)
        log.append(
            ev.Drift(
                turn=turn,
                drift_id=d.id,
                drift_kind=d.kind,
                commit=sha,
                message=d.message,
                author=d.author,
                files=[p for p, _ in d.files],
                shas={p: content_sha(c) if c is not None else None for p, c in d.files},
            )
        )
        n += 1
    return n


def expand_touches(step: Step, files: list[str]) -> list[str]:
    out = []
    for pattern in step.touches:
        matches = (
            [f for f in files if fnmatch.fnmatch(f, pattern)]
            if any(c in pattern for c in "*?[")
            else [pattern]
        )
        out += [m for m in matches if m not in out]
    return out


def read_head(step: Step, sandbox: Sandbox, last_certified_commit: str) -> tuple[StepHead, list[str]]:
    """The step head, read fresh: TREE text, FILES of the step's touches, and a drift note
    when HEAD moved since the harness's own last commit."""
    base = sandbox.base_commit
    head_commit = sandbox.git("rev-parse", "HEAD").strip()
    status = sandbox.git("status", "--short").strip()
    tree = "\n".join(
        [
            "$ git status --short",
            status or "(clean)",
            f"$ git log --oneline {base[:12]}..HEAD",
            sandbox.git("log", "--oneline", f"{base}..HEAD").strip() or "(none)",
            f"$ git diff --stat {base[:12]}",
            sandbox.git("diff", "--stat", base).strip() or "(no changes)",
        ]
    )
    listing = sandbox.list_files()
    files = []
    for path in expand_touches(step, listing):
        if path in listing:
            files.append((path, sandbox.read_file(path)))
    note = None
    if head_commit != last_certified_commit:
        moved = sandbox.git("log", "--format=%h %an: %s", f"{last_certified_commit}..HEAD").strip()
        stat = sandbox.git("diff", "--stat", last_certified_commit, "HEAD").strip()
        note = (
            "CONSISTENCY NOTE: the repository changed since the last certified step, by commits "
            f"not yours:\n{moved}\n{stat}\nCopies of these files seen before this note are stale: read them again."
        )
    dirty = [line[3:] for line in status.splitlines()]
    return StepHead(tree=tree, files=tuple(files), repo_commit=head_commit, drift_note=note), dirty


def record_invariants(log: EventLog, turn: int, invariants: list[Invariant], codes: dict[str, int]) -> int:
    """Log each in-force invariant whose probe did not exit 0; returns how many."""
    violations = 0
    for inv in invariants:
        code = codes.get(inv.id, -1)  # missing = the probe never ran to the end: not a pass
        if code != 0:
            violations += 1
            log.append(
                ev.Invariant(
                    turn=turn, invariant=inv.id, status="violated", exit_code=code, text=invariant_line(inv)
                )
            )
    return violations


def learn(
    step: Step, submitted: list[str], learned: tuple[Invariant, ...], source: str
) -> tuple[Invariant, ...]:
    """Append the model's own invariants (capped, oldest notes first out) and, when `source` is
    "harness" (a strategy's `invariants_from`), the step's established ones first; with "model"
    only what the model wrote in its hand-off is carried."""
    new = list(step.establishes) if source == "harness" else []
    for k, text in enumerate(submitted[:4], 1):
        text = " ".join(str(text).split())[:240]
        if text:
            new.append(Invariant(id=f"n-{step.id}-{k}", text=text, stated=step.id))
    merged = list(learned) + new
    while len(merged) > LEARNED_CAP:
        victim = next((i for i, inv in enumerate(merged) if inv.id.startswith("n-")), 0)
        merged.pop(victim)
    return tuple(merged)


def in_force(task: TaskSpec, after_step_index: int) -> list[Invariant]:
    """Invariants established by now whose lifting step (if any) has not been reached."""
    order = {s.id: i for i, s in enumerate(task.steps)}
    out = []
    for inv in task.all_invariants():
        if not inv.check:
            continue
        stated = order.get(inv.stated, -1)
        until = order.get(inv.until, len(task.steps)) if inv.until else len(task.steps)
        if stated <= after_step_index < until:
            out.append(inv)
    return out
