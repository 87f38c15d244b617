"""`subagent`: each step runs in a fresh conversation seeded with a ledger brief.

    stable prefix | brief from ledger entries | this step's turns

The parent keeps only ledger entries: for every passed step, the entry its conversation
returned (the `submit_step` notes, hence `requires_handoff`) with the step's diffstat and
the tree its check passed on. The brief holds those entries, the learned invariants, the
remaining plan and the current step (+ last failure), and a consistency note when HEAD
moved by an outside commit (`drift_note`, a channel, as in ledger). There is no FILES and no
TREE: the subagent reads what it needs from the repository, so it holds fewer stale beliefs
at the price of more reads.

Every conversation is a sequence of ordinary model calls, so the tokens of every one of
them are counted by the harness like any other call. Inside a step, if the turns no longer
fit, the oldest are dropped as in `raw` (there is no summariser).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt

from bench.core.knobs import Knobs
from bench.core.types import Message
from strategies import _brief, _common
from strategies.base import Built, State, stable_prefix

NAME = "subagent"


class SubagentConfig(Knobs):
    """conf/strategy/subagent.yaml: the knobs of `subagent`, each with its default; the channels
    (docs/instrument.md §6) are switches, recorded with the run."""

    name: Literal["subagent"] = "subagent"
    invariants_from: _common.InvariantsFrom = Field(
        default="model",
        description="model: carry only the model's hand-off; harness (a labelled variant, "
        "a channel): also the step's established invariants",
    )
    drift_note: StrictBool = Field(
        default=True,
        description="channel: CONSISTENCY NOTE when HEAD moved by an outside commit since the last step",
    )
    notes_cap_chars: Annotated[StrictInt, Field(ge=16)] = Field(
        default=400, description="each ledger entry's notes / learned invariant, as shown"
    )


class SubagentStrategy:
    name = NAME
    config_class = SubagentConfig
    requires_handoff = True
    fresh_session_per_step = True  # the harness logs a new session id at every step head

    def __init__(self, config: SubagentConfig | None = None) -> None:
        self.config = config or SubagentConfig()

    @property
    def invariants_from(self) -> str:
        """Where the harness takes the invariants it carries from (bench/trial/steps.py `learn`)."""
        return self.config.invariants_from

    @property
    def channels(self) -> dict[str, bool]:
        """What this strategy shows beyond the transcript a raw agent has (docs/instrument.md §6)."""
        return {
            "drift_note": self.config.drift_note,
            "harness_invariants": self.config.invariants_from == "harness",
        }

    def brief(self, state: State) -> str:
        cap = self.config.notes_cap_chars
        return _brief.join(
            f"SUBAGENT BRIEF for [step:{state.step.id}] (a fresh conversation for this step; "
            "earlier steps are known only by their ledger entries)",
            [
                _brief.learned_invariants(state, cap),
                _brief.remaining_plan(state),
                _brief.ledger_entries(state, cap),
                _brief.current_step(state),
                _brief.drift(state) if self.config.drift_note else None,
                "Read the files you need from the repository: none are shown here.",
            ],
        )

    def build(self, state: State) -> Built:
        prefix = stable_prefix(state.task)
        head = [*prefix, Message(role="user", content=self.brief(state))]
        f = _common.fit(head, state.transcript[state.step_start + 1 :], state.budget)
        return Built(
            messages=f.messages,
            stable=len(prefix),
            tokens=f.tokens,
            dropped=f.dropped,
            tokens_before_drop=f.tokens_before_drop,
        )

    def summary_request(self, state: State) -> tuple[Message, ...]:
        raise RuntimeError("the subagent strategy never compacts: build() never sets compact=True")
