"""`raw`: the whole transcript, every turn.

Context = stable prefix (system + policy, task + plan-time invariants + plan) followed by
every message since the trial started. When that no longer fits the budget (window minus
the reply reserve), the oldest whole turns are dropped (an assistant message always goes
together with its tool results), keeping the stable prefix and the current step notice;
`Built.dropped` tells the harness to log a `context_truncation`. The model is not told:
this is the baseline of an agent loop that simply appends.
"""

from __future__ import annotations

from typing import Literal

from bench.core.knobs import Knobs
from bench.core.types import Message
from strategies import _common
from strategies.base import Built, State, TranscriptOnly


class RawConfig(Knobs):
    """conf/strategy/raw.yaml: `raw` has no knobs beyond its name."""

    name: Literal["raw"] = "raw"


class RawStrategy(TranscriptOnly):
    name = "raw"
    config_class = RawConfig

    def __init__(self, config: RawConfig | None = None) -> None:
        self.config = config or RawConfig()

    def build(self, state: State) -> Built:
        return _common.fit_transcript(state, state.transcript)

    def summary_request(self, state: State) -> tuple[Message, ...]:
        raise RuntimeError("the raw strategy never compacts: build() never sets compact=True")
