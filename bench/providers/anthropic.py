"""Anthropic Messages API provider (streaming; prompt caching at the strategy's tier boundary).

Usage maps one to one: Anthropic's `input_tokens` already excludes cache reads and writes,
which are `cache_read_input_tokens` and `cache_creation_input_tokens`. The sampling seed has
no Anthropic parameter; it travels as `metadata.user_id = "seed-<n>"` (the loopback server
reads it back). The SDK is imported here, lazily, never at `bench` import time.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping
from typing import Any

from bench.core.types import Message, ToolSpec
from bench.providers.http.config import RealModelConfig
from bench.providers.http.transport import HttpProvider, StreamResult
from bench.providers.wire import anthropic as wire


class AnthropicProvider(HttpProvider):
    provider_name = "anthropic"

    def __init__(self, settings: RealModelConfig, *, sleep: Any = time.sleep) -> None:
        super().__init__(settings, sleep=sleep)
        import anthropic

        kwargs: dict[str, Any] = {
            "api_key": self._secret,
            "base_url": settings.base_url,
            "max_retries": 0,
            "timeout": settings.timeout_s,
        }
        if "open_telemetry" in inspect.signature(anthropic.Anthropic.__init__).parameters:
            kwargs["open_telemetry"] = False  # spans are ours (bench.tracking.tracing), not the SDK's
        self._client = anthropic.Anthropic(**kwargs)

    @classmethod
    def from_config(cls, model_cfg: Mapping[str, Any], **kwargs: Any) -> AnthropicProvider:
        return cls(RealModelConfig.from_mapping(model_cfg, "anthropic"), **kwargs)

    def _build(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None,
    ) -> dict[str, Any]:
        system, wire_messages = wire.to_wire(messages, cache_breakpoint)
        body: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": max_tokens,
            "messages": wire_messages,
            "metadata": {"user_id": f"seed-{seed}"},
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = wire.tools_to_wire(tools)
        return body

    def _stream(self, body: dict[str, Any], start: float, messages: tuple[Message, ...]) -> StreamResult:
        acc = wire.StreamAccumulator(start, time.monotonic)
        stream = self._client.messages.create(**body, stream=True)
        try:
            for event in stream:
                acc.feed(event)
        finally:
            stream.close()
        return acc.result()

    def count_tokens(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...] = ()) -> int:
        """The endpoint's own count of a request's input tokens (no retries: a diagnostic)."""
        system, wire_messages = wire.to_wire(messages)
        kwargs: dict[str, Any] = {"model": self.model_id, "messages": wire_messages}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = wire.tools_to_wire(tools)
        return int(self._client.messages.count_tokens(**kwargs).input_tokens)

    def close(self) -> None:
        self._client.close()
