"""Which thread of an agent a request belongs to: `main`, `side`, `subagent` or `compaction`.

Read from the request stream, and from the agent's own signal where it gives one:
- Codex says it in the header `x-codex-turn-metadata` (`request_kind: turn|compaction`);
- a compaction request asks for a summary: Claude Code ends with a user message beginning
  "CRITICAL: Respond with TEXT ONLY", Codex with "You are performing a CONTEXT CHECKPOINT
  COMPACTION" (docs/agents.md, "Threads"), ctxbench's own summariser with COMPACTION_MARKER;
- the main thread is the system prompt of the first request that offered tools (or that prompt with
  more after it, or, when Codex says `request_kind: turn`, the same first prompt message: its base
  instructions); a request with tools and another system prompt is a subagent's; a request without tools that is not a
  compaction is a side call (a title, a commit message).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from bench.core.types import Message, ToolSpec

THREADS = ("main", "side", "subagent", "compaction")
COMPACTION_MARKER = "[compaction-request]"  # ctxbench's own summariser (strategies/_common.py)
COMPACTION_OPENINGS = (
    "CRITICAL: Respond with TEXT ONLY",
    "You are performing a CONTEXT CHECKPOINT COMPACTION",
)


def agent_signal(headers: Mapping[str, str]) -> str | None:
    """The agent's own word on what a request is (Codex's `request_kind`), or None."""
    raw = headers.get("x-codex-turn-metadata")
    if not raw:
        return None
    try:
        kind = json.loads(raw).get("request_kind")
    except (ValueError, AttributeError):
        return None
    return str(kind) if kind else None


# A system block that is not the prompt: Claude Code's first block is a billing header whose
# version suffix changes from request to request (e.g. after its own compaction).
NOT_THE_PROMPT = ("x-anthropic-billing-header:",)


def _prompt(messages: tuple[Message, ...]) -> list[str]:
    return [
        m.content
        for m in messages
        if m.role == "system" and m.content and not m.content.startswith(NOT_THE_PROMPT)
    ]


def _system(messages: tuple[Message, ...]) -> str:
    return "\n".join(_prompt(messages))[:20000]


class Threads:
    """Classifies one agent's requests in order; remembers the main thread's system prompt."""

    def __init__(self) -> None:
        self.main_system: str | None = None
        self.main_first = ""  # the main thread's first prompt message (Codex's base instructions)

    def classify(
        self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...], signal: str | None = None
    ) -> str:
        if signal == "compaction":
            return "compaction"
        last = next((m for m in reversed(messages) if m.role == "user"), None)
        if last is not None and (
            last.content.lstrip().startswith(COMPACTION_OPENINGS) or COMPACTION_MARKER in last.content
        ):
            return "compaction"
        if not tools:
            return "side"
        system, first = _system(messages), next(iter(_prompt(messages)), "")
        if self.main_system is None:
            self.main_system, self.main_first = system, first
        # The main thread's prompt may change after its first message (measured, Codex 0.171.0: its
        # skills' list from its second process on, their descriptions longer after a compaction): what
        # stays is its base instructions, and Codex's own word that the request is a turn of its thread.
        grown = bool(self.main_system) and system.startswith(self.main_system)
        said = signal == "turn" and bool(self.main_first) and first == self.main_first
        return "main" if system == self.main_system or grown or said else "subagent"
