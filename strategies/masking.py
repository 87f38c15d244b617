"""`masking`: the transcript with older tool outputs replaced by short placeholders.

Observation masking (Lindenbauer et al. 2025, "The Complexity Trap: Simple Observation Masking
Is as Efficient as LLM Summarization for Agent Context Management", arXiv 2508.21433): on
SWE-bench Verified it matched raw transcripts and LLM summaries at about half the cost. The
context is the `raw` one -- stable prefix, then every message since the trial started -- except
that the tool results of all but the newest `keep_recent_turns` assistant turns are replaced by
a one-line placeholder naming the tool and how much was omitted. The model's own messages
(its reasoning, its tool calls, the notes of its submit_step calls) and the harness's user
messages stay verbatim, so what survives of an old file read or check result is what the
model wrote about it. Past the budget the oldest whole turns are dropped as in `raw`, with a
`context_truncation`. Masking rewrites old history every turn, so the provider's prefix cache
holds only up to the first masked result: the price of the smaller context.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, StrictInt

from bench.core.knobs import Knobs
from bench.core.types import Message
from strategies import _common
from strategies.base import Built, State, TranscriptOnly

NAME = "masking"


class MaskingConfig(Knobs):
    """conf/strategy/masking.yaml: the knobs of `masking`, each with its default."""

    name: Literal["masking"] = "masking"
    keep_recent_turns: Annotated[StrictInt, Field(ge=0)] = Field(
        default=10, description="assistant turns whose tool results stay verbatim (the paper's window: 10)"
    )


def placeholder(m: Message) -> Message:
    lines = m.content.count("\n") + 1 if m.content else 0
    return Message(
        role="tool",
        content=f"[{m.name or 'tool'} output omitted: {lines} lines]",
        tool_call_id=m.tool_call_id,
        name=m.name,
    )


def masked(transcript: Sequence[Message], keep_recent_turns: int) -> tuple[Message, ...]:
    """The transcript with the tool results of all but the newest assistant turns masked."""
    turns = [b for b, _ in _common.groups(transcript) if transcript[b].role == "assistant"]
    keep_from = (
        turns[-keep_recent_turns]
        if 0 < keep_recent_turns <= len(turns)
        else (0 if keep_recent_turns else len(transcript))
    )
    return tuple(
        placeholder(m) if m.role == "tool" and i < keep_from else m for i, m in enumerate(transcript)
    )


class MaskingStrategy(TranscriptOnly):
    name = NAME
    config_class = MaskingConfig

    def __init__(self, config: MaskingConfig | None = None) -> None:
        self.config = config or MaskingConfig()

    def build(self, state: State) -> Built:
        return _common.fit_transcript(state, masked(state.transcript, self.config.keep_recent_turns))

    def summary_request(self, state: State) -> tuple[Message, ...]:
        raise RuntimeError("the masking strategy never compacts: build() never sets compact=True")
