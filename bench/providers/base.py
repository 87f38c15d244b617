"""The provider contract (docs/design.md §8)."""

from __future__ import annotations

from typing import Protocol

from bench.core.types import Completion, Message, ToolSpec


class ProviderError(RuntimeError):
    """The provider failed after its retries: the trial fails with `provider_error`."""


class ContextOverflow(ProviderError):
    """The provider refused the request as longer than its context window: the context is the
    strategy's doing, so the trial fails with `context_overflow`, an agent failure."""


class Provider(Protocol):
    model_id: str

    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion:
        """One model call. `cache_breakpoint` = number of leading messages forming the stable
        prefix (providers that take explicit cache marks put one after it).
        `stop_reason == "max_tokens"` is returned, not raised: the harness logs it as an
        `output_truncation` and fails the trial with that reason."""
        ...

    def close(self) -> None: ...
