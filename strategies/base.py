"""The strategy protocol: how the model-visible context is built from durable state.

A strategy is pure over `State`: the same state yields byte-identical messages. Anything a
strategy needs that is not a function of the conversation (the tree, file contents, a
compaction summary) arrives in `State`, read and logged by the harness first, so that the
context can be rebuilt from the event log alone.

Requests have three tiers: the stable prefix (system + policy, task + plan-time
invariants; byte-identical every turn, cache breakpoint after it), working state, and the
volatile suffix (the newest turns).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bench.core.render import SYSTEM_PROMPT, policy_block, task_block
from bench.core.types import Message, ToolSpec
from tasks.spec import Invariant, TaskSpec


@dataclass(frozen=True)
class Certified:
    """One passed step, as the harness certified it."""

    step_id: str
    check: str
    tree_sha: str  # the tree the check ran against
    notes: str  # the model's answer to "what must later steps not undo?"
    diffstat: str  # `git diff --stat` of the step's changes


@dataclass(frozen=True)
class StepHead:
    """Durable facts the harness read fresh at the head of the current step."""

    tree: str  # git status, git log base..HEAD, git diff --stat base
    files: tuple[tuple[str, str], ...]  # (path, current content) of the step's touches
    repo_commit: str  # HEAD at the step's head
    drift_note: str | None = None  # set when HEAD moved by an outside commit since the last step


@dataclass(frozen=True)
class Summary:
    """A compaction: `text` stands in for `transcript[:upto]`."""

    text: str
    upto: int


@dataclass(frozen=True)
class State:
    """What a strategy may look at.

    `transcript` holds every message since the trial started, in order: the harness's
    step notice (a user message starting `CURRENT STEP [step:..]`) at `step_start`,
    assistant turns, tool results, harness notes.
    """

    task: TaskSpec
    tools: tuple[ToolSpec, ...]
    transcript: tuple[Message, ...]
    turn: int
    step_index: int
    step_start: int
    attempt: int
    certified: tuple[Certified, ...]
    learned: tuple[Invariant, ...]  # invariants/notes appended at step completion (capped)
    last_failure: str | None
    head: StepHead
    summary: Summary | None
    window: int  # context window in tokens for this trial (the arm may shrink it)
    max_output: int  # tokens reserved for the reply

    @property
    def step(self):
        return self.task.steps[self.step_index]

    @property
    def budget(self) -> int:
        """Tokens the context may take: the window minus the reply reserve."""
        return self.window - self.max_output


@dataclass(frozen=True)
class Built:
    messages: tuple[Message, ...]
    stable: int  # messages[:stable] are the stable prefix; the cache breakpoint goes after it
    tokens: int  # local token count of `messages`
    dropped: int = 0  # transcript messages dropped to fit the window (a context_truncation)
    tokens_before_drop: int = 0
    compact: bool = False  # asks the harness to compact (summarise) and build again


class Strategy(Protocol):
    """Every member is read by ctxbench's own loop (bench/trial/loop.py); each strategy states
    each one (docs/plugins.md)."""

    name: str
    # A step cannot be certified before the model has said what later steps must not undo.
    requires_handoff: bool
    # A new session at every step head (subagent's fresh brief): logged with `step_start`.
    fresh_session_per_step: bool
    # Where the invariants carried to later steps (`State.learned`) come from when a step is
    # certified: "model", only what the model wrote in its hand-off; "harness", the step's
    # established invariants first, then the model's (a channel: bench/trial/steps.py `learn`).
    invariants_from: str

    @property
    def channels(self) -> dict[str, bool]:
        """Facts the strategy shows that a raw transcript holds only if the agent fetched them
        (the step's FILES, TREE, the drift note, harness-written invariants): each a config
        switch, on or off. Every strategy can reach the same facts through the tools."""
        ...

    def build(self, state: State) -> Built: ...

    def summary_request(self, state: State) -> tuple[Message, ...]:
        """The summariser call's messages, when `build` asked to compact."""
        ...


class TranscriptOnly:
    """The `Strategy` members of a strategy that shows the transcript and nothing else (raw,
    masking, compaction): no hand-off, one session for the trial, no carried invariants."""

    requires_handoff = False
    fresh_session_per_step = False
    invariants_from = (
        "model"  # it shows no carried invariants (State.learned): nothing to take from the harness
    )

    @property
    def channels(self) -> dict[str, bool]:
        """None beyond the transcript: what else it knows it fetched with the tools itself."""
        return {}


def stable_prefix(task: TaskSpec) -> tuple[Message, ...]:
    """System + policy, then task + plan-time invariants + plan. Never changes in a trial."""
    return (
        Message(role="system", content=SYSTEM_PROMPT + "\n\n" + policy_block(task)),
        Message(role="user", content=task_block(task)),
    )
