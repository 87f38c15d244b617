"""The sim behind an external agent: each agent's tool dialect translated, in one module per
dialect, to and from ctxbench's own tools (read_file, write_file, edit_file, run, submit_step ...),
so the sim perceives the context the agent actually sent and acts on the task's steps through
the agent's own tools (docs/agents.md).

    provider = DialectProvider(SimProvider(...), DIALECTS.load("mini_bash"))

A dialect has `to_ctxbench(messages) -> messages` (the agent's context as ctxbench's tools would
have shown it) and `from_ctxbench(completion) -> completion` (the sim's calls as the agent's
tools). The translation of a call is exact both ways, so the sim's own earlier calls read back as
it made them. The own loop never goes through here: its records do not change.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from bench.core.registry import Registry
from bench.core.toolspecs import TOOLS
from bench.core.types import Completion, Message, ToolSpec

DIALECTS = Registry(
    "agent.dialect",
    {
        "mini_bash": "bench.sim.dialects.mini_bash:DIALECT",
        "codex": "bench.sim.dialects.codex:DIALECT",
        "claude_code": "bench.sim.dialects.claude_code:DIALECT",
    },
    hint="an agent's dialect names a module of bench/sim/dialects/",
)


class Dialect(Protocol):
    def to_ctxbench(self, messages: tuple[Message, ...]) -> tuple[Message, ...]: ...

    def from_ctxbench(self, reply: Completion) -> Completion: ...


class DialectProvider:
    """A provider (the sim) that speaks an agent's dialect: it sees ctxbench's tools, the agent
    sees its own."""

    def __init__(self, inner: object, dialect: Dialect) -> None:
        self.inner, self.dialect = inner, dialect
        self.model_id = str(getattr(inner, "model_id", "sim"))

    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion:
        own = self.dialect.to_ctxbench(tuple(messages))
        reply = self.inner.complete(  # type: ignore[attr-defined]
            own,
            TOOLS if tools else (),
            max_tokens=max_tokens,
            seed=seed,
            cache_breakpoint=cache_breakpoint,
        )
        out = self.dialect.from_ctxbench(reply)
        return dataclasses.replace(
            out, extra={**out.extra, "ctxbench_calls": [c.__dict__ for c in reply.tool_calls]}
        )

    def close(self) -> None:
        getattr(self.inner, "close", lambda: None)()
