"""`compaction`: the transcript until it passes `threshold × budget`, then a summary.

Until the first compaction the context is the raw one: stable prefix + the transcript.
When it passes `threshold × budget` (budget = window minus the reply reserve; see
`_common.should_compact` for the exact trigger), or when `state.turn` is one of
`force_at_turns`, `build` asks the harness to compact: the harness
sends `summary_request(state)` to the configured model (no tools), stores the reply as
`state.summary = Summary(text, upto=len(transcript))`, logs a `compaction` event and
builds again. From then on the context is

    stable prefix | summary | [current step notice, if it was summarised] | transcript tail

where the tail starts `keep_recent_turns` assistant turns before `summary.upto` (those
turns are kept verbatim, not summarised). A later compaction summarises the previous
summary and the turns since. If the compacted context still does not fit, the oldest
turns of the tail are dropped as in `raw`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, StrictInt

from bench.core.knobs import Knobs
from bench.core.types import Message
from strategies import _common
from strategies.base import Built, State, TranscriptOnly, stable_prefix

NAME = "compaction"


class CompactionConfig(Knobs):
    """conf/strategy/compaction.yaml: the knobs of `compaction`, each with its default."""

    name: Literal["compaction"] = "compaction"
    threshold: _common.Fraction = Field(
        default=0.75,
        description="compact past this fraction of the budget (0, 1], once the turns to "
        "summarise hold half the headroom (or at once when over the budget)",
    )
    force_at_turns: tuple[Annotated[StrictInt, Field(ge=0)], ...] = Field(
        default=(), description="also compact at these turns (State.turn), for controlled comparisons"
    )
    keep_recent_turns: _common.KeepRecent = Field(
        default=1, description="assistant turns kept verbatim after the summary: 0, 1 or 2"
    )
    prompt: _common.CompactionPrompt = Field(
        default=None,
        validate_default=True,
        description="null = the built-in prompt (_common.DEFAULT_COMPACTION_PROMPT); "
        "an override must contain the line [compaction-request]",
    )


class CompactionStrategy(TranscriptOnly):
    name = NAME
    config_class = CompactionConfig

    def __init__(self, config: CompactionConfig | None = None) -> None:
        self.config = config or CompactionConfig()

    def _parts(self, state: State) -> tuple[list[Message], Sequence[Message], int | None]:
        """(head, tail, pin): head = prefix [+ summary + step notice]; tail = verbatim turns."""
        head = list(stable_prefix(state.task))
        cur = _common.live(state, 0, self.config.keep_recent_turns)
        if cur.summary is not None:
            head.append(_common.summary_message(cur.summary, ""))
            if cur.tail > state.step_start:  # the model must always see the current step
                head.append(_common.step_notice(state))
        tail = state.transcript[cur.tail :]
        pin = state.step_start - cur.tail if cur.tail <= state.step_start < len(state.transcript) else None
        return head, tail, pin

    def wants_compaction(self, state: State, context_tokens: int) -> bool:
        c = self.config
        return _common.should_compact(
            state, context_tokens, c.threshold, 0, c.keep_recent_turns, forced=state.turn in c.force_at_turns
        )

    def build(self, state: State) -> Built:
        head, tail, pin = self._parts(state)
        stable = len(stable_prefix(state.task))
        total = _common.tokens(head) + _common.tokens(tail)
        if self.wants_compaction(state, total):
            return Built(messages=tuple(head) + tuple(tail), stable=stable, tokens=total, compact=True)
        f = _common.fit(head, tail, state.budget, pin=pin)
        return Built(
            messages=f.messages,
            stable=stable,
            tokens=f.tokens,
            dropped=f.dropped,
            tokens_before_drop=f.tokens_before_drop,
        )

    def summary_request(self, state: State) -> tuple[Message, ...]:
        return _common.summary_request(
            state, stable_prefix(state.task), 0, self.config.keep_recent_turns, self.config.prompt, ""
        )
