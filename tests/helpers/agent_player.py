"""A test agent: ctxbench's own loop with the raw strategy, seated as an external agent
(`agent.player=tests.helpers.agent_player:LoopAgent`), so a study can cross agents with
strategies in seconds, with the sim's real successes and failures, and no agent's install."""

from __future__ import annotations

from typing import Any

from bench.agents.spec import AgentSpec
from bench.config import compose
from bench.providers.base import Provider
from bench.trial.loop import LoopPlayer, LoopSettings
from strategies import make_strategy


class LoopAgent(LoopPlayer):
    def __init__(
        self,
        spec: AgentSpec,
        provider: Provider,
        *,
        seed: int,
        window: int,
        relative: bool,
        max_output: int,
        exec_timeout_s: float,
    ) -> None:
        strategy: Any = compose(["strategy=raw"]).strategy
        super().__init__(
            make_strategy(strategy),
            provider,
            LoopSettings(window=window, max_output=max_output, seed=seed, exec_timeout_s=exec_timeout_s),
        )
