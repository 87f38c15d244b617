"""The TaskSpec contract (docs/design.md §8): what a generated task is made of.

A task family module exposes `generate(seed, **size) -> TaskSpec`. Everything here is
plain frozen data except `oracle`, the engineer's judgement the simulated models use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

# What an outside commit does to the repository (docs/design.md, "Drift"):
#   new_caller     adds a caller of the old API in code the agent already migrated
#   changed_value  changes or adds lines in a file the agent already read, which a later step
#                  must carry (an edit made from memory applies cleanly and is wrong)
#   rename_helper  renames a helper that code written from memory still calls
#   tool_change    changes a shipped check tool
#   new_trap       adds code that looks dead but is needed; only its commit message says so
DRIFT_KINDS = ("new_caller", "changed_value", "rename_helper", "tool_change", "new_trap")


@dataclass(frozen=True)
class Invariant:
    """A standing constraint later steps must respect.

    `id` is what the model sees as `[inv:<id>]`. `check` is a shell command (run in the
    sandbox) that exits 0 while the invariant holds; the final acceptance runs it.
    `until` names the step that lifts it (e.g. the step that deletes the shim), if any.
    `stated` says where it enters the task: "plan" (in the task text) or the id of the
    step whose completion establishes it. `anchors` are the words a statement must contain to
    state it (ctxlog/statements.py): the harness's `invariant_recall` measure asks whether
    a sentence with a keep cue and every anchor is in the context; `text` contains them.
    """

    id: str
    text: str
    check: str | None = None
    until: str | None = None
    stated: str = "plan"
    anchors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    id: str  # "s01", "s02", ... as the model sees it: `[step:s01]`
    title: str
    instructions: str
    touches: tuple[str, ...]  # repo-relative paths (globs allowed) the step edits
    check: str  # shell command whose exit code certifies the step; fast (< 1 s)
    establishes: tuple[Invariant, ...] = ()


@dataclass(frozen=True)
class Trap:
    """Code that looks dead in the visible tree but is needed: removing it passes the step that
    does it and fails `caught_by`'s check (a later step, or "final"). Ground truth for the
    task's own tests and `tasks.show`; the simulated model never reads it."""

    id: str
    path: str
    protected_by: str  # the invariant that states it ("" when only a drift commit's message does)
    description: str
    caught_by: str
    cleanup: str = ""  # the `Cleanup.key` prefix of the tidy-up that removes it
    drift: str = ""  # the drift that adds it (a `new_trap`), "" when it is in the base tree


@dataclass(frozen=True)
class Drift:
    """A commit by an outside actor, applied by the harness before step `before_step`."""

    id: str
    kind: Literal["new_caller", "changed_value", "rename_helper", "tool_change", "new_trap"]
    before_step: str
    message: str
    author: str  # "Name <email>", never the agent's
    files: tuple[tuple[str, str | None], ...]  # (path, new content); None deletes the file
    description: str = ""


@dataclass(frozen=True)
class Edit:
    """One edit the engineer makes. `replace` is search/replace (fails if `search` is absent);
    `write` replaces the whole file with `content`; `delete` removes it."""

    path: str
    kind: Literal["replace", "write", "delete"]
    search: str = ""
    replace: str = ""
    content: str = ""


@dataclass(frozen=True)
class Cleanup:
    """A plausible tidy-up a competent engineer sees in code: something that looks dead.

    `key` names it by content (kind, path, symbol), so trials that see the same code share
    their random draws. `anchors` are the words a constraint must mention to stop it (see
    ctxlog/statements.py); `edits` do it, against the text the cleanup was found in.
    Whether it is a mistake is the repository's business, not the cleanup's.
    """

    key: str
    anchors: tuple[str, ...]
    edits: tuple[Edit, ...]
    what: str


@dataclass(frozen=True)
class StepPlan:
    """What a competent engineer does for a step, given the files it can see.

    `reads`: files it must look at before editing (not yet perceived). When non-empty,
    `edits` may be empty: read first, then ask again.
    """

    reads: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()


class Oracle(Protocol):
    """Competence, never judgement: which edits make a step pass, and which tidy-ups the code
    on view invites. Where mistakes happen is the simulated model's business (bench/sim)."""

    def edits_for(self, step_id: str, perceived: Mapping[str, str]) -> StepPlan:
        """Edits computed ONLY from `perceived` (path -> the newest content the model can
        see). A stale or missing file must lead to the realistic wrong edit, never to a magic
        right one."""
        ...

    def cleanups(self, perceived: Mapping[str, str], paths: tuple[str, ...]) -> tuple[Cleanup, ...]:
        """Tidy-ups the files `paths` invite, judged from `perceived` alone: code that looks
        dead in the visible tree (nothing visible uses it)."""
        ...


@dataclass(frozen=True)
class TaskSpec:
    task_id: str  # e.g. "signature_migration/7/steps=12": family + seed + size; tasks.from_id() rebuilds it
    family: str
    seed: int
    title: str
    text: str  # the task statement the model reads
    files: tuple[tuple[str, str], ...]  # the base repository, sorted by path
    invariants: tuple[Invariant, ...]  # stated at plan time
    steps: tuple[Step, ...]
    final_check: str  # whole suite + invariant checks
    protected: tuple[str, ...]  # globs the agent may not write (shipped tests, fixtures)
    traps: tuple[Trap, ...]
    drift: tuple[Drift, ...]
    test_command: str  # how to run the suite, as the task text states it
    oracle: Oracle = field(compare=False, repr=False)
    # `Cleanup.key` prefixes of tidy-ups that are right: code that is really dead, whose removal
    # the task rewards (refusing one is the other error kind, beside a trap taken)
    harmless: tuple[str, ...] = ()
    # The final acceptance's hidden checks (tasks/common/hidden.py): test files the harness holds
    # and never writes to the working copy, a pure function of the task's seed, and their command
    hidden: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    hidden_check: str = ""

    def step(self, step_id: str) -> Step:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(f"task {self.task_id} has no step {step_id!r}")

    def all_invariants(self) -> tuple[Invariant, ...]:
        return self.invariants + tuple(i for s in self.steps for i in s.establishes)

    def standing(self, index: int) -> tuple[Invariant, ...]:
        """Invariants in force at the head of step `index`: stated at plan time or by an earlier
        step, and not yet lifted (a step named in `until` may lift it, so it is not in force
        at that step's head)."""
        order = {s.id: i for i, s in enumerate(self.steps)}
        return tuple(
            inv
            for inv in self.all_invariants()
            if order.get(inv.stated, -1)
            < index
            < (order.get(inv.until, len(self.steps)) if inv.until else len(self.steps) + 1)
        )
