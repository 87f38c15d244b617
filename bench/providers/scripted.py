"""`provider: scripted`: a model that replays a fixed list of tool calls, one list per turn.

    model=adversary model.attack=traversal      # a built-in attack (bench/providers/attacks/)
    model=adversary +model.script='[[{name: run, args: {command: ls}}]]'   # or any script

The adversarial suite, the host-only loop tests and anyone reproducing a harness bug use it:
it makes exactly the calls it is given, whatever the context says. Once the script is used
up it keeps calling submit_step (`when_done: submit`, so an attack that persists is tried on
every step and the final check), or replies with no tool call (`stop`: the loop nudges, then
fails the step at its turn budget).
A compaction request (a call without tools) gets a fixed summary and does not advance the
script. Usage is counted with the local tokenizer; latency and cost are zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from bench.core.tokens import count_messages, count_text
from bench.core.types import Completion, Message, ToolCall, ToolSpec, Usage, canonical_json, request_hash
from bench.providers.attacks import ATTACKS

_CONFIG_KEYS = (
    "name",
    "provider",
    "model_id",
    "attack",
    "script",
    "when_done",
    "window",
    "max_output",
    "price",
    "time_scale",
    "record",
)
WHEN_DONE = ("submit", "stop")
SUMMARY = "(scripted model: no summary)"

Turn = Sequence[ToolCall]


def as_turns(script: Iterable[Iterable[Any]]) -> list[tuple[ToolCall, ...]]:
    """Turns of tool calls from `[[{"name": .., "args": {..}}, ...], ...]` (or ToolCalls, or
    (name, args) pairs). `args` is passed on as given, even when it is not an object: the
    tools must cope with what a model sends."""
    turns = []
    for t, calls in enumerate(script):
        if isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Iterable):
            raise ValueError(f"model.script[{t}] must be a list of tool calls, got {calls!r:.80}")
        out = []
        for k, call in enumerate(calls):
            if isinstance(call, ToolCall):
                out.append(call)
                continue
            if isinstance(call, Mapping) and set(call) <= {"name", "args"} and "name" in call:
                name, args = call["name"], call.get("args", {})
            elif isinstance(call, tuple | list) and len(call) == 2:
                name, args = call
            else:
                raise ValueError(
                    f"model.script[{t}][{k}] must be {{name: .., args: {{..}}}}, got {call!r:.80}"
                )
            out.append(ToolCall(f"call_{t}_{k}", str(name), args))
        turns.append(tuple(out))
    return turns


class ScriptedProvider:
    def __init__(
        self, turns: Iterable[Iterable[Any]], *, model_id: str = "scripted", when_done: str = "stop"
    ) -> None:
        if when_done not in WHEN_DONE:
            raise ValueError(f"model.when_done={when_done!r} is not one of {', '.join(WHEN_DONE)}")
        self.turns = as_turns(turns)
        self.model_id = model_id
        self.when_done = when_done
        self.calls = 0  # turns replayed so far

    @classmethod
    def from_config(cls, model_cfg: Mapping[str, Any]) -> ScriptedProvider:
        unknown = sorted(set(model_cfg) - set(_CONFIG_KEYS))
        if unknown:
            raise ValueError(
                f"model.{unknown[0]}: unknown key for a scripted model (known: {', '.join(_CONFIG_KEYS)})"
            )
        script, attack = model_cfg.get("script"), model_cfg.get("attack")
        if script is None:
            if attack not in ATTACKS:
                raise ValueError(
                    f"model.attack={attack!r} is not one of {', '.join(ATTACKS)} "
                    "(or give model.script: a list of turns of tool calls)"
                )
            script = ATTACKS[attack]
        return cls(
            _plain(script),
            model_id=str(model_cfg.get("model_id") or model_cfg.get("name") or "scripted"),
            when_done=str(model_cfg.get("when_done") or "stop"),
        )

    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion:
        rhash = request_hash(messages, tools, max_tokens, seed)
        calls: tuple[ToolCall, ...] = ()
        content = SUMMARY
        if tools:  # a turn (a compaction request comes without tools)
            if self.calls < len(self.turns):
                calls = tuple(self.turns[self.calls])
            elif self.when_done == "submit":
                calls = (
                    ToolCall(f"call_{self.calls}_0", "submit_step", {"notes": "done", "invariants": []}),
                )
            self.calls += 1
            content = "" if calls else "(scripted model: script done)"
        out = count_text(content) + sum(
            count_text(c.name) + count_text(canonical_json(_jsonable(c.args))) for c in calls
        )
        return Completion(
            content=content,
            tool_calls=calls,
            stop_reason="tool_use" if calls else "end_turn",
            usage=Usage(input=count_messages(messages), output=out),
            latency_s=0.0,
            ttft_s=0.0,
            model_id=self.model_id,
            request_hash=rhash,
        )

    def close(self) -> None:
        pass


def _jsonable(args: Any) -> Any:
    return args if isinstance(args, Mapping | list | str | int | float | bool) or args is None else repr(args)


def _plain(obj: Any) -> Any:
    """OmegaConf containers as plain lists and dicts."""
    return OmegaConf.to_container(obj, resolve=True) if isinstance(obj, DictConfig | ListConfig) else obj
