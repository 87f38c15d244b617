"""Small shared types: messages, tool calls, usage, prices, completions; `plain` config values.

`tasks` and `strategies` may import from here (and from `bench.core.tokens`, `bench.core.render`);
nothing else in `bench` is theirs to import.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from bench.core import emitted
from bench.core.toolspecs import ToolSpec as ToolSpec  # defined beside the tools it describes

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the model made it, admitted where it is made (bench/core/emitted.py):
    id and name bounded strings, arguments plain JSON within the bounds and its tool's schema,
    or the refusal the dispatcher answers. A call read back from the log is not admitted again
    (`Message.from_dict`): it is what was admitted when it entered."""

    id: str
    name: str
    args: dict[str, Any]

    def __post_init__(self) -> None:
        name = emitted.admit_name(self.name)
        object.__setattr__(self, "id", emitted.admit_id(self.id))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "args", emitted.admit_args(name, self.args))


@dataclass(frozen=True)
class Message:
    """One model-visible message in the harness's provider-neutral form.

    `tool` messages answer one tool call (`tool_call_id`); providers map them onto their
    own wire format (Anthropic: a `tool_result` block in a user turn).
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        # Text that enters a context (a tool result naming an undecodable file, a check's output)
        # is made carryable here, once: the next provider request must be able to encode it.
        for key in ("content", "name", "tool_call_id"):
            value = getattr(self, key)
            if isinstance(value, str):
                object.__setattr__(self, key, emitted.carry(value))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [asdict(c) for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        """A logged message exactly as it was written (admitted when it entered): not admitted
        again, so its sha is the one the log holds, whatever an older harness let through."""
        return _as_logged(
            cls,
            role=d["role"],
            content=d["content"],
            tool_calls=tuple(_as_logged(ToolCall, **c) for c in d.get("tool_calls", ())),
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
        )

    def canonical(self) -> str:
        """canonical_json(self.to_dict()), made once: every turn hashes every message of its
        context twice (context_sha, request_hash), and a message is frozen."""
        cached = self.__dict__.get("_canonical")
        if cached is None:
            cached = canonical_json(self.to_dict())
            object.__setattr__(self, "_canonical", cached)
        return cached

    def sha(self) -> str:
        cached = self.__dict__.get("_sha")
        if cached is None:
            cached = hashlib.sha256(self.canonical().encode()).hexdigest()
            object.__setattr__(self, "_sha", cached)
        return cached


def _as_logged(cls: Any, **values: Any) -> Any:
    """An instance of the frozen dataclass `cls` with `values` as they are, without __post_init__."""
    obj = object.__new__(cls)
    for f in fields(cls):
        object.__setattr__(obj, f.name, values.get(f.name, f.default))
    return obj


_SURROGATE = re.compile("[\ud800-\udfff]")


def canonical_json(obj: Any) -> str:
    # One serialisation everywhere, so hashes of the same content never differ by formatting.
    text = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if text.isascii():
        return text
    # A lone surrogate (an undecodable file name read as str, a model's "\udc80") has no UTF-8
    # form: JSON's own escape for it reads back as the same string, and writes as ASCII.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def sha256_json(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def context_sha(messages: tuple[Message, ...] | list[Message]) -> str:
    """Hash of a model-visible context: the list of its messages' hashes."""
    return sha256_json([m.sha() for m in messages])


@dataclass(frozen=True)
class Usage:
    """Token usage, Anthropic-style: `input` excludes cache reads and cache writes.

    Total prompt tokens = input + cache_read + cache_write.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )


@dataclass(frozen=True)
class Price:
    """USD per million tokens, per usage category: `model.price` of every model config."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, usage: Usage) -> float:
        return (
            usage.input * self.input
            + usage.output * self.output
            + usage.cache_read * self.cache_read
            + usage.cache_write * self.cache_write
        ) / 1e6

    @classmethod
    def from_mapping(cls, price: Mapping[str, Any] | None) -> Price:
        """All four keys, each a number >= 0; a missing price would silently misstate cost."""
        price = dict(price or {})
        keys = [f.name for f in fields(cls)]
        unknown = sorted(set(price) - set(keys))
        if unknown:
            raise ValueError(f"model.price has unknown key {unknown[0]!r}; allowed: {', '.join(keys)}")
        for key, v in price.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
                raise ValueError(
                    f"model.price.{key} must be a number >= 0 (USD per million tokens), got {v!r}"
                )
        missing = [k for k in keys if k not in price]
        if missing:
            raise ValueError(
                f"model.price.{missing[0]} is missing (USD per million tokens; all of "
                f"{', '.join(keys)} are required)"
            )
        return cls(**{k: float(price[k]) for k in keys})


@dataclass(frozen=True)
class Completion:
    content: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str
    usage: Usage
    latency_s: float
    ttft_s: float
    model_id: str
    request_hash: str
    cost_usd: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """The reply admitted (bench/core/emitted.py): a reply past its bounds is the model's
        error (`stop_reason="error"`, failed by the loop as `model_error`), cut to them."""
        content = emitted.carry(self.content if isinstance(self.content, str) else "")
        calls = tuple(
            c if isinstance(c, ToolCall) else ToolCall(f"call_{i}", getattr(c, "name", c), {})
            for i, c in enumerate(self.tool_calls or ())
        )
        problem = ""
        if len(content) > emitted.MAX_REPLY_CHARS:
            problem = f"a reply of {len(content)} characters (at most {emitted.MAX_REPLY_CHARS})"
            content = content[: emitted.MAX_REPLY_CHARS]
        if len(calls) > emitted.MAX_TOOL_CALLS:
            problem = f"{len(calls)} tool calls in one reply (at most {emitted.MAX_TOOL_CALLS})"
            calls = calls[: emitted.MAX_TOOL_CALLS]
        object.__setattr__(self, "content", content)
        object.__setattr__(self, "tool_calls", calls)
        object.__setattr__(self, "model_id", emitted.admit_id(self.model_id))
        if problem and self.stop_reason != "max_tokens":
            object.__setattr__(self, "stop_reason", "error")
            self.extra["error"] = problem

    def as_message(self) -> Message:
        return Message(role="assistant", content=self.content, tool_calls=self.tool_calls)


def request_hash(
    messages: tuple[Message, ...] | list[Message],
    tools: tuple[ToolSpec, ...] | list[ToolSpec],
    max_tokens: int,
    seed: int,
) -> str:
    """Key of a model request; the replay cassette and the prefix cache use it: sha256 of
    canonical_json({"messages": [m.to_dict()...], "tools": [asdict(t)...], "max_tokens", "seed"}),
    put together from each message's own canonical form (the same bytes, without
    serialising the whole context again every turn)."""
    body = (
        f'{{"max_tokens":{json.dumps(max_tokens)},"messages":[{",".join(m.canonical() for m in messages)}],'
        f'"seed":{json.dumps(seed)},"tools":{_tools_json(tools)}}}'
    )
    return hashlib.sha256(body.encode()).hexdigest()


_TOOLS_JSON: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], str]] = {}


def _tools_json(tools: tuple[ToolSpec, ...] | list[ToolSpec]) -> str:
    """canonical_json of the tool specs; the same published list every turn, serialised once."""
    key = tuple(id(t) for t in tools)
    hit = _TOOLS_JSON.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], tools, strict=True)):
        hit = _TOOLS_JSON[key] = (
            tuple(tools),
            canonical_json([asdict(t) for t in tools]),
        )  # keeps the ids alive
    return hit[1]


def plain(value: Any) -> Any:
    """A config value (OmegaConf container, mapping, sequence) as plain dicts and tuples, resolved:
    what frozen config objects and hashes are built from."""
    if type(value).__name__ in ("DictConfig", "ListConfig"):
        from omegaconf import OmegaConf

        value = OmegaConf.to_container(value, resolve=True)
    if isinstance(value, str | bytes):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return tuple(plain(v) for v in value)
    return value
