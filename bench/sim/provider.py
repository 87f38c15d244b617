"""`model=sim` (and `model=oracle`): a behavioural model of an LLM coding agent (docs/design.md §7).

It makes strategies differ only through what is in the context, where, and how fresh:
  perception  beliefs parsed from the model-visible messages, nothing else
  recall      context rot + lost-in-the-middle, keyed common random numbers
  action      read / edit (via the task's oracle) / tidy up / submit / give up
  summary     what survives a compaction, per kind of statement
  usage       BPE tokens, prefix cache, latency, cost
It never sees the strategy, the arm or any harness state. From the task it takes only its
competence: the oracle of the task named by the `[task:ID]` marker in the context (through
`tasks.from_id`), which says which edits make a step pass and which tidy-ups code invites --
never where a mistake would hurt; constraints protect by their content in the context. The only
other input is `seed` (= task_seed * 1000 + rep), which keys every draw together with the
step, the attempt and what is drawn for. `model=oracle` is this class with perfect recall, no
temptation and no damage; `model.mechanisms` switches single mechanisms off (ablations).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from bench.core.tokens import count_text
from bench.core.types import Completion, Message, Price, ToolCall, ToolSpec, plain
from bench.providers.base import ProviderError
from bench.sim.action import Reply, act
from bench.sim.params import DRAWS, SimParams, load
from bench.sim.perception import perceive
from bench.sim.summary import summarise
from bench.sim.usage import Meter, output_tokens
from tasks.spec import TaskSpec

# The compaction strategy's prompt contains this line; a last user message holding it asks
# the sim for a summary instead of an action.
COMPACTION_MARKER = "[compaction-request]"


def _load_task(task_id: str) -> TaskSpec:
    import tasks  # the family modules, not bench: the dependency points the allowed way

    return tasks.from_id(task_id)


class SimProvider:
    def __init__(
        self,
        params: Mapping[str, Any],
        *,
        model_id: str = "sim",
        price: Mapping[str, float],
        window: int,
        time_scale: float = 0.0,
        task_loader: Callable[[str], TaskSpec] | None = None,
        mechanisms: Mapping[str, bool] | None = None,
        draws: str = "shared",
        stream: str = "",
    ) -> None:
        """`task_loader` exists for tests with hand-built tasks; the default is `tasks.from_id`.
        Either way the sim learns which task it is on only from `[task:ID]` in the context, and
        uses only its oracle."""
        self.params = SimParams.from_mapping(params, mechanisms)
        self.price = Price.from_mapping(price)
        if window <= 0:
            raise ValueError(f"model.window must be > 0, got {window}")
        if time_scale < 0:
            raise ValueError(f"model.time_scale must be >= 0, got {time_scale}")
        if draws not in DRAWS:
            raise ValueError(f"model.draws must be one of {', '.join(DRAWS)}, got {draws!r}")
        self.model_id = model_id
        # independent: the cell's own stream is mixed into every draw's seed (no common random numbers)
        self._stream = str(stream) if draws == "independent" else None
        self.window = int(window)
        self.time_scale = float(time_scale)
        self._loader = task_loader or _load_task
        self._tasks: dict[str, TaskSpec] = {}
        self._meter = Meter(self.params, self.price)

    def _task(self, task_id: str) -> TaskSpec:
        if task_id not in self._tasks:
            try:
                self._tasks[task_id] = self._loader(task_id)
            except Exception as exc:  # a bad id in the context is the provider's failure, named
                raise ProviderError(f"sim cannot load task {task_id!r} named in the context: {exc}") from exc
        return self._tasks[task_id]

    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion:
        """One simulated call. `cache_breakpoint` is accepted and not needed: the sim's cache is
        automatic over the longest shared prefix (see bench.sim.usage)."""
        messages, tools = tuple(messages), tuple(tools)
        if not messages:
            raise ValueError("sim: complete() needs at least one message")
        luck = (
            seed
            if self._stream is None
            else int(hashlib.sha256(f"{seed}\x1f{self._stream}".encode()).hexdigest()[:15], 16)
        )
        beliefs = perceive(messages)
        prompt = self._meter.prompt_tokens(messages, tools)
        if prompt > self.window:
            raise ProviderError(
                f"prompt of {prompt} tokens exceeds the {self.model_id} window of {self.window} tokens"
            )
        last = messages[-1]
        if last.role == "user" and COMPACTION_MARKER in last.content:
            reply = Reply(summarise(beliefs, self.params, luck))
        elif beliefs.task_id is None:
            reply = Reply("There is no [task:...] in the context; I have nothing to work on.")
        else:
            reply = act(beliefs, self._task(beliefs.task_id).oracle, self.params, luck)

        rhash = self._meter.request_hash(messages, tools, max_tokens, seed)
        content, calls, stop = reply.content, reply.calls, "tool_use" if reply.calls else "end_turn"
        n_out = output_tokens(content, calls)
        if n_out > max_tokens:
            # Cut like a real model: the text is truncated and no tool call is complete.
            content, calls, stop = _truncate(content, max_tokens), (), "max_tokens"
            n_out = output_tokens(content, calls)
        tool_calls = tuple(ToolCall(_call_id(rhash, i), name, args) for i, (name, args) in enumerate(calls))
        bill = self._meter.bill(messages, tools, n_out)
        if self.time_scale > 0:
            time.sleep(bill.latency_s * self.time_scale)
        return Completion(
            content=content,
            tool_calls=tool_calls,
            stop_reason=stop,
            usage=bill.usage,
            latency_s=bill.latency_s,
            ttft_s=bill.ttft_s,
            model_id=self.model_id,
            request_hash=rhash,
            cost_usd=bill.cost_usd,
            extra={
                "prompt_tokens": bill.prompt_tokens,
                "step": beliefs.step,
                "decisions": list(reply.decisions),
                "slips": list(reply.slips),
            },
        )

    @classmethod
    def from_config(cls, model_cfg: Mapping[str, Any]) -> SimProvider:
        return from_config(model_cfg)

    def close(self) -> None:
        self._tasks.clear()


def _call_id(rhash: str, i: int) -> str:
    return "call_" + hashlib.sha256(f"{rhash}:{i}".encode()).hexdigest()[:16]


def _truncate(text: str, max_tokens: int) -> str:
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix of the text within the budget
        mid = (lo + hi + 1) // 2
        if count_text(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def from_config(model_cfg: Mapping[str, Any]) -> SimProvider:
    """Build from the Hydra `model` group (conf/model/sim.yaml, oracle.yaml: the SimModel schema)."""
    cfg = load(plain(model_cfg))
    return SimProvider(
        cfg.params.model_dump(),
        model_id=cfg.model_id or cfg.name,
        price=cfg.price.model_dump(),
        window=cfg.window,
        time_scale=cfg.time_scale,
        mechanisms=cfg.mechanisms.model_dump(),
        draws=cfg.draws,
        stream=cfg.stream,
    )
