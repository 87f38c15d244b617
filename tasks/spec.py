"""The TaskSpec contract (docs/design.md §8): what a generated task is made of.

A task family module exposes `generate(seed, **size) -> TaskSpec`. Everything here is
plain frozen data except `oracle`, the engineer's judgement the simulated models use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

DRIFT_KINDS = ("new_caller", "stale_edit", "rename_helper", "tool_change")


@dataclass(frozen=True)
class Invariant:
    """A standing constraint later steps must respect.

    `id` is what the model sees as `[inv:<id>]`. `check` is a shell command (run in the
    sandbox) that exits 0 while the invariant holds; the final acceptance runs it.
    `until` names the step that lifts it (e.g. the step that deletes the shim), if any.
    `stated` says where it enters the task: "plan" (in the task text) or the id of the
    step whose completion establishes it.
    """

    id: str
    text: str
    check: str | None = None
    until: str | None = None
    stated: str = "plan"


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
    """Code that looks dead in the visible tree but is needed until `caught_by`'s check."""

    id: str
    path: str
    protected_by: str  # the invariant id whose recall keeps an engineer from removing it
    description: str
    caught_by: str  # step id (or "final") whose check fails if the trap was removed early


@dataclass(frozen=True)
class Drift:
    """A commit by an outside actor, applied by the harness before step `before_step`."""

    id: str
    kind: Literal["new_caller", "stale_edit", "rename_helper", "tool_change"]
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
class Temptation:
    """A plausible clean-up that breaks a trap. An engineer who recalls `fact_id` never does it."""

    fact_id: str
    trap_id: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class StepPlan:
    """What a competent engineer does for a step, given what they can see and remember.

    `reads`: files they must look at before editing (not yet perceived). When non-empty,
    `edits` may be empty: read first, then ask again.
    `notes` / `invariants`: the answer to "what must later steps not undo?".
    """

    reads: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()
    temptations: tuple[Temptation, ...] = ()
    notes: str = ""
    invariants: tuple[str, ...] = ()


class Oracle(Protocol):
    def edits_for(self, step_id: str, perceived_files: Mapping[str, str],
                  recalled_facts: frozenset[str]) -> StepPlan:
        """Edits computed ONLY from `perceived_files` (path -> the newest content the model
        can see) and `recalled_facts` (ids of invariants / facts it recalls). A stale or
        missing file must lead to the realistic wrong edit, never to a magic right one."""
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
    facts: tuple[tuple[str, str], ...] = ()  # other recallable facts (id, text), e.g. plan shape

    def step(self, step_id: str) -> Step:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(f"task {self.task_id} has no step {step_id!r}")

    def all_invariants(self) -> tuple[Invariant, ...]:
        return self.invariants + tuple(i for s in self.steps for i in s.establishes)
