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
from typing import Annotated, Any, Literal, get_args

from omegaconf import DictConfig, ListConfig, OmegaConf
from pydantic import AfterValidator, ConfigDict, Field, StrictStr

from bench.core import knobs
from bench.core.tokens import count_messages, count_text
from bench.core.types import Completion, Message, ToolCall, ToolSpec, Usage, canonical_json, request_hash

WhenDone = Literal["submit", "stop"]
WHEN_DONE = get_args(WhenDone)


def _known_attack(name: str) -> str:
    """An attack that exists (bench/providers/attacks/): a new one is a valid model.attack at once.
    Looked up when a value is checked, not when the schema is made: every process that composes a
    config registers this schema's defaults, and need not load the attack scripts to do so."""
    from bench.providers.attacks import ATTACKS

    if name not in ATTACKS:
        raise ValueError(f"no such attack; one of {', '.join(ATTACKS)}")
    return name


Attack = Annotated[StrictStr, AfterValidator(_known_attack)]
SUMMARY = "(scripted model: no summary)"


class Adversary(knobs.Knobs):
    """`model=adversary` (conf/model/adversary.yaml): the scripted model's knobs."""

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())  # `model_id` is a knob
    name: StrictStr = Field(description="the option's name (conf/model/<name>.yaml); the model id if unset")
    provider: Literal["scripted"] = Field(description="the provider that serves it")
    model_id: StrictStr | None = Field(
        default=None, description="the reported model id; null = name (not in the composed config unless set)"
    )
    attack: Attack = Field(
        default="noop", description="a built-in attack script (bench/providers/attacks/); noop is the control"
    )
    script: list[Any] | None = Field(
        default=None, description="a list of turns, each a list of {name, args} tool calls; replaces attack"
    )
    when_done: WhenDone = Field(
        default="submit",
        description="after the script: submit (every step and the final check) or stop (no tool call)",
    )
    window: Annotated[knobs.Integer, Field(ge=1)] = Field(
        default=200000, description="tokens the harness may fill; the scripted model ignores the context"
    )
    max_output: Annotated[knobs.Integer, Field(ge=1)] = Field(
        default=4096, description="tokens reserved for a reply"
    )
    record: StrictStr | None = Field(
        default=None, description="a path: append every call to a cassette for model=replay"
    )


# A null default the YAML never stated: registering it would add a key to every adversary trial's
# config and move its hash (bench/sim/params.py does the same).
UNSTATED = ("model_id",)


def store() -> None:
    """`/knobs/model/adversary`: the schema's defaults, but the UNSTATED keys."""
    from hydra.core.config_store import ConfigStore

    node = {k: v for k, v in knobs.defaults(Adversary).items() if k not in UNSTATED}
    ConfigStore.instance().store(group="knobs/model", name="adversary", node=node)


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
        name = model_cfg.get("name") or "adversary"
        cfg = knobs.validate(
            Adversary, _plain(model_cfg), "model", f"conf/model/{name}.yaml or the command line"
        )
        from bench.providers.attacks import ATTACKS

        return cls(
            ATTACKS[cfg.attack] if cfg.script is None else cfg.script,
            model_id=cfg.model_id or cfg.name,
            when_done=cfg.when_done,
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
