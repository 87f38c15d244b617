"""What answers behind the loopback server (bench.serve.server): the simulated model, one instance per
conversation.

A conversation is keyed by the task id in its messages (`[task:...]`, see bench.core.render) plus
the sampling seed, so each trial's sim keeps its own prefix cache, just as a direct `model=sim`
trial does. Two trials that share task *and* seed (e.g. two strategies at the same rep) share
an instance when they run against one server at the same time; run them against separate
servers (or one after the other with a restart) if their caches must not meet.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from bench.core.types import Completion, Message, ToolSpec

SIM_CONFIG = Path(__file__).resolve().parents[2] / "conf" / "model" / "sim.yaml"


class Backend(Protocol):
    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion: ...

    def count_tokens(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> int: ...


def load_model_config(path: str | Path = SIM_CONFIG) -> dict[str, Any]:
    """A model config file. One under conf/model/ is composed by Hydra (oracle.yaml extends
    sim.yaml); any other file is read as self-contained YAML."""
    from omegaconf import OmegaConf

    path = Path(path).resolve()
    if path.parent == SIM_CONFIG.parent:
        from bench.config import compose

        cfg = compose([f"model={path.stem}"]).model
    else:
        cfg = OmegaConf.load(str(path))
    try:
        out = OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # interpolations that need the root config: keep them unresolved
        out = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(out, dict)
    return {str(k): v for k, v in out.items()}


def conversation_key(messages: tuple[Message, ...], seed: int) -> tuple[str, int]:
    from bench.core.render import parse_task_id

    for m in messages:
        tid = parse_task_id(m.content)
        if tid:
            return tid, seed
    return "", seed


class SimBackend:
    """SimProvider instances from `conf/model/sim.yaml` (or `model_cfg`), one per conversation."""

    def __init__(
        self, model_cfg: Mapping[str, Any] | None = None, *, max_conversations: int = 256, factory: Any = None
    ) -> None:
        self.model_cfg = dict(model_cfg) if model_cfg is not None else load_model_config()
        self._factory = factory or self._sim_factory
        self._max = max_conversations
        self._instances: OrderedDict[tuple[str, int], tuple[Any, threading.Lock]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _sim_factory(model_cfg: Mapping[str, Any]) -> Any:
        from bench.sim.provider import SimProvider

        return SimProvider.from_config(model_cfg)

    def instance(self, messages: tuple[Message, ...], seed: int) -> tuple[Any, threading.Lock]:
        key = conversation_key(messages, seed)
        with self._lock:
            if key not in self._instances:
                self._instances[key] = (self._factory(self.model_cfg), threading.Lock())
                while len(self._instances) > self._max:
                    _, (old, _) = self._instances.popitem(last=False)
                    getattr(old, "close", lambda: None)()
            self._instances.move_to_end(key)
            return self._instances[key]

    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion:
        sim, lock = self.instance(messages, seed)
        with lock:  # a conversation's calls are serial, as in a trial
            return sim.complete(
                messages, tools, max_tokens=max_tokens, seed=seed, cache_breakpoint=cache_breakpoint
            )

    def count_tokens(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> int:
        from bench.core.tokens import count_messages, tools_tokens

        return count_messages(messages) + tools_tokens(tools)[1]  # as the reply's usage counts them

    @property
    def conversations(self) -> int:
        """How many conversations (task, seed) have their own sim instance."""
        return len(self._instances)
