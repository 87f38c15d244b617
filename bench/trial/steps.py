"""What the harness does at step boundaries: drift commits, reading the step head fresh,
certifying a step from an observed exit code, and checking standing invariants."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from bench.core.render import invariant_line
from bench.eventlog.events import EventLog
from bench.sandbox.base import Sandbox
from strategies.base import StepHead
from tasks.spec import Invariant, Step, TaskSpec

AGENT_AUTHOR = "ctxbench agent <agent@ctxbench.invalid>"
FAILURE_TAIL_CHARS = 1500
NOTES_CAP_CHARS = 600
LEARNED_CAP = 24  # learned invariants kept; the oldest model-written notes go first


def apply_drift(task: TaskSpec, step: Step, sandbox: Sandbox, log: EventLog, turn: int) -> int:
    """Commit every drift scheduled before `step` as its outside author. Returns how many."""
    n = 0
    for d in task.drift:
        if d.before_step != step.id:
            continue
        for path, content in d.files:
            if content is None:
                sandbox.delete_file(path)
            else:
                sandbox.write_file(path, content)
        sha = sandbox.commit(d.message, d.author)
        log.append("drift", turn, drift_id=d.id, drift_kind=d.kind, commit=sha, message=d.message,
                   author=d.author, files=[p for p, _ in d.files])
        n += 1
    return n


def expand_touches(step: Step, files: list[str]) -> list[str]:
    out = []
    for pattern in step.touches:
        matches = [f for f in files if fnmatch.fnmatch(f, pattern)] if any(c in pattern for c in "*?[") \
            else [pattern]
        out += [m for m in matches if m not in out]
    return out


def read_head(step: Step, sandbox: Sandbox, last_certified_commit: str) -> tuple[StepHead, list[str]]:
    """The step head, read fresh: TREE text, FILES of the step's touches, and a drift note
    when HEAD moved since the harness's own last commit."""
    base = sandbox.base_commit
    head_commit = sandbox.git("rev-parse", "HEAD").strip()
    status = sandbox.git("status", "--short").strip()
    tree = "\n".join([
        "$ git status --short", status or "(clean)",
        f"$ git log --oneline {base[:12]}..HEAD", sandbox.git("log", "--oneline", f"{base}..HEAD").strip() or "(none)",
        f"$ git diff --stat {base[:12]}", sandbox.git("diff", "--stat", base).strip() or "(no changes)",
    ])
    listing = sandbox.list_files()
    files = []
    for path in expand_touches(step, listing):
        if path in listing:
            files.append((path, sandbox.read_file(path)))
    note = None
    if head_commit != last_certified_commit:
        moved = sandbox.git("log", "--format=%h %an: %s", f"{last_certified_commit}..HEAD").strip()
        stat = sandbox.git("diff", "--stat", last_certified_commit, "HEAD").strip()
        note = ("CONSISTENCY NOTE: the repository changed since the last certified step, by commits "
                f"not yours:\n{moved}\n{stat}\nCopies of these files seen before this note are stale: read them again.")
    dirty = [line[3:] for line in status.splitlines()]
    return StepHead(tree=tree, files=tuple(files), repo_commit=head_commit, drift_note=note), dirty


@dataclass
class CheckOutcome:
    passed: bool
    exit_code: int
    output: str
    duration_s: float
    timed_out: bool
    invariant_codes: dict[str, int] = field(default_factory=dict)


_ELAPSED = re.compile(r"\bin \d+(?:\.\d+)?s\b")


def scrub(output: str) -> str:
    """Drop wall-clock figures (pytest's "in 0.41s") from model-visible output: they differ
    run to run, and a context that differs by them would break common random numbers and
    byte-identical logs (docs/design.md §12)."""
    return _ELAPSED.sub("in <elapsed>", output)


_INV_MARK = "__ctxbench_invariants__"


def run_check(sandbox: Sandbox, log: EventLog, turn: int, step_id: str, command: str,
              invariants: list[Invariant] | None = None) -> CheckOutcome:
    """Run a certifying check; with `invariants`, the standing invariant checks run in the
    same sandbox exec right after it (an exec costs ~80 ms, a study runs thousands). The
    check's own exit code and output are kept apart from the invariants' results."""
    script = command
    if invariants:
        probes = "; ".join(f"( {inv.check} ) >/dev/null 2>&1; echo \"__inv {inv.id} $?\"" for inv in invariants)
        script = f"( {command} ); __rc=$?; echo {_INV_MARK}; {probes}; exit $__rc"
    res = sandbox.exec(script)
    passed = res.exit_code == 0 and not res.timed_out
    own, _, probed = res.output.partition(_INV_MARK + "\n")
    output = scrub(own)
    log.append("check", turn, step=step_id, command=command, exit_code=res.exit_code, timed_out=res.timed_out,
               output=output[-FAILURE_TAIL_CHARS:], invariants=[i.id for i in invariants or ()],
               t={"duration_s": round(res.duration_s, 4)})
    codes: dict[str, int] = {}
    for line in probed.splitlines():
        if line.startswith("__inv "):
            _, inv_id, exit_code = line.split()
            codes[inv_id] = int(exit_code)
    return CheckOutcome(passed, res.exit_code, output, res.duration_s, res.timed_out, codes)


def record_invariants(log: EventLog, turn: int, invariants: list[Invariant], codes: dict[str, int]) -> int:
    """Log each in-force invariant whose probe did not exit 0; returns how many."""
    violations = 0
    for inv in invariants:
        code = codes.get(inv.id, -1)  # missing = the probe never ran to the end: not a pass
        if code != 0:
            violations += 1
            log.append("invariant", turn, invariant=inv.id, status="violated", exit_code=code,
                       text=invariant_line(inv))
    return violations


def learn(step: Step, submitted: list[str], learned: tuple[Invariant, ...]) -> tuple[Invariant, ...]:
    """Append the step's established invariants and the model's own (capped, oldest notes first out)."""
    new = list(step.establishes)
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
