"""`ledger`: the context is rebuilt at the head of every step from durable state only.

    stable prefix | step brief | this step's turns

The stable prefix (system + policy, task + plan-time invariants + plan) never changes. The
brief is a pure function of `State`'s durable fields, in this order:

    INVARIANTS established by completed steps (never summarised, never dropped)
    REMAINING PLAN
    CERTIFIED: one line per passed step, naming its check and the tree it passed on
    TREE: git status / log base..HEAD / diff --stat, read fresh by the harness (`tree`)
    CURRENT STEP (+ LAST FAILURE)
    FILES: current contents of the step's touches, within the files budget
    CONSISTENCY NOTE, when HEAD moved by an outside commit since the last step (`drift_note`)

TREE, the consistency note and harness-written invariants (`invariants_from=harness`) are
channels: facts a raw agent reaches only by running `git log`/`git status` itself. Each is a
switch, recorded with the run (`param.strategy.*`) and named by `channels`.

Earlier steps' conversations are not shown at all, so the context at a step's head does
not grow with the number of turns. Inside a step the turns since the step notice follow
the brief (the notice itself is not repeated: the brief has CURRENT STEP). Compaction is
only a backstop inside a step: when the step's turns push the context past
`threshold × budget` (the trigger `_common.should_compact` shares with `compaction`), the
harness summarises those turns (the summary's `upto` is always past `step_start`), and
the summary never crosses into another step.

`requires_handoff`: the harness refuses `submit_step` without notes (the answer to "what
must later steps not undo?"); they come back as CERTIFIED notes and learned invariants.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt

from bench.core.knobs import Knobs
from bench.core.types import Message
from strategies import _brief, _common
from strategies.base import Built, State, stable_prefix

NAME = "ledger"


class LedgerConfig(Knobs):
    """conf/strategy/ledger.yaml: the knobs of `ledger`, each with its default. Channels
    (docs/instrument.md §6) are facts this strategy shows that a raw agent gets only by fetching
    them with the tools; each is a switch, recorded with the run."""

    name: Literal["ledger"] = "ledger"
    files_budget_tokens: Annotated[StrictInt, Field(ge=0)] = Field(
        default=4000,
        description="FILES (a channel; 0 = off) shows the step's touches up to "
        "min(this, files_budget_fraction x budget) tokens; the rest are listed by path",
    )
    files_budget_fraction: _common.Fraction = Field(
        default=0.35, description="the FILES budget's cap as a fraction of the budget (0, 1]"
    )
    invariants_from: _common.InvariantsFrom = Field(
        default="model",
        description="model: carry only the model's hand-off; harness (a labelled variant, a "
        "channel): also each step's established invariants, as the harness announces them",
    )
    tree: StrictBool = Field(
        default=True, description="channel: TREE section (git status, git log base..HEAD, diff --stat)"
    )
    drift_note: StrictBool = Field(
        default=True,
        description="channel: CONSISTENCY NOTE when HEAD moved by an outside commit since the last step",
    )
    notes_cap_chars: Annotated[StrictInt, Field(ge=16)] = Field(
        default=400, description="each certified step's notes / learned invariant, as shown"
    )
    threshold: _common.Fraction = Field(
        default=0.75,
        description="within-step backstop: compact the step's turns past this fraction of the budget",
    )
    keep_recent_turns: _common.KeepRecent = Field(
        default=1, description="assistant turns kept verbatim after a backstop summary: 0, 1 or 2"
    )
    prompt: _common.CompactionPrompt = Field(
        default=None,
        validate_default=True,
        description="null = the built-in compaction prompt; an override must contain the line [compaction-request]",
    )


class LedgerStrategy:
    name = NAME
    config_class = LedgerConfig
    requires_handoff = True
    fresh_session_per_step = False

    def __init__(self, config: LedgerConfig | None = None) -> None:
        self.config = config or LedgerConfig()

    @property
    def invariants_from(self) -> str:
        """Where the harness takes the invariants it carries from (bench/trial/steps.py `learn`)."""
        return self.config.invariants_from

    @property
    def channels(self) -> dict[str, bool]:
        """What this strategy shows beyond the transcript a raw agent has (docs/instrument.md §6)."""
        c = self.config
        return {
            "files": c.files_budget_tokens > 0,
            "tree": c.tree,
            "drift_note": c.drift_note,
            "harness_invariants": c.invariants_from == "harness",
        }

    def files_budget(self, state: State) -> int:
        c = self.config
        return max(0, min(c.files_budget_tokens, int(c.files_budget_fraction * state.budget)))

    def brief(self, state: State) -> str:
        cap = self.config.notes_cap_chars
        return _brief.join(
            f"STEP BRIEF for [step:{state.step.id}] (rebuilt by the harness from durable state; "
            "it replaces the conversation of earlier steps)",
            [
                _brief.learned_invariants(state, cap),
                _brief.remaining_plan(state),
                _brief.certified(state, cap),
                _brief.tree(state) if self.config.tree else None,
                _brief.current_step(state),
                _brief.files(state, self.files_budget(state)),
                _brief.drift(state) if self.config.drift_note else None,
            ],
        )

    def _head(self, state: State) -> list[Message]:
        return [*stable_prefix(state.task), Message(role="user", content=self.brief(state))]

    def build(self, state: State) -> Built:
        seg = state.step_start + 1  # the step notice is not repeated: the brief has CURRENT STEP
        head = self._head(state)
        cur = _common.live(state, seg, self.config.keep_recent_turns)
        if cur.summary is not None:
            head.append(_common.summary_message(cur.summary, " OF THIS STEP"))
        tail = state.transcript[max(cur.tail, seg) :]
        stable = len(stable_prefix(state.task))
        total = _common.tokens(head) + _common.tokens(tail)
        if _common.should_compact(state, total, self.config.threshold, seg, self.config.keep_recent_turns):
            return Built(messages=tuple(head) + tuple(tail), stable=stable, tokens=total, compact=True)
        f = _common.fit(head, tail, state.budget)
        return Built(
            messages=f.messages,
            stable=stable,
            tokens=f.tokens,
            dropped=f.dropped,
            tokens_before_drop=f.tokens_before_drop,
        )

    def summary_request(self, state: State) -> tuple[Message, ...]:
        return _common.summary_request(
            state,
            self._head(state),
            state.step_start + 1,
            self.config.keep_recent_turns,
            self.config.prompt,
            " OF THIS STEP",
        )
