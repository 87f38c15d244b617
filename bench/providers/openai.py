"""OpenAI Chat Completions provider, also for OpenAI-compatible endpoints via `model.base_url`
(vLLM, Ollama, llama.cpp server, Kimi/Moonshot, DeepSeek).

Streams with `stream_options.include_usage` so the final chunk carries usage; OpenAI's prompt
caching is automatic and read back from `prompt_tokens_details.cached_tokens` (see
_openai_wire.usage_from_wire for the normalisation). The reply cap is sent as
`max_completion_tokens` to OpenAI itself and as `max_tokens` to compatible endpoints (which
all accept that one; not all accept the newer name). The SDK is imported lazily.

`model.tool_calls=grammar` constrains each reply to one call of a published tool
(wire/constrained.py); `model.stream=false` asks for whole replies, for servers that refuse
streamed tool calls (llama-cpp-python's); the timings are then latency = ttft.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bench.core.types import Message, ToolSpec, Usage
from bench.providers.http.config import RealModelConfig
from bench.providers.http.transport import HttpProvider, StreamResult
from bench.providers.wire import constrained
from bench.providers.wire import openai as wire


class OpenAIProvider(HttpProvider):
    provider_name = "openai"

    def __init__(self, settings: RealModelConfig, *, sleep: Any = time.sleep) -> None:
        super().__init__(settings, sleep=sleep)
        self._calls = 0  # model calls of this trial so far: each samples with a seed of its own
        import openai

        kwargs: dict[str, Any] = {"api_key": self._secret, "max_retries": 0, "timeout": settings.timeout_s}
        if settings.base_url:
            kwargs["base_url"] = settings.base_url
        self._client = openai.OpenAI(**kwargs)

    @classmethod
    def from_config(cls, model_cfg: Mapping[str, Any], **kwargs: Any) -> OpenAIProvider:
        return cls(RealModelConfig.from_mapping(model_cfg, "openai"), **kwargs)

    def _build(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None,
    ) -> dict[str, Any]:
        # No explicit cache marks: OpenAI caches the longest previously seen prefix by itself.
        grammar = self.settings.tool_calls == "grammar" and bool(tools)
        self._calls += 1
        body: dict[str, Any] = {
            "model": self.model_id,
            "seed": wire.call_seed(seed, self._calls),
            "user": f"seed-{seed}",
            "messages": constrained.to_wire(messages, tools) if grammar else wire.to_wire(messages),
        }
        if self.settings.stream:
            body["stream_options"] = {"include_usage": True}
        body["max_tokens" if self.settings.base_url else "max_completion_tokens"] = max_tokens
        if grammar:
            body["response_format"] = constrained.response_format(tools)
        elif tools:
            body["tools"] = wire.tools_to_wire(tools)
        return body

    def _stream(self, body: dict[str, Any], start: float, messages: tuple[Message, ...]) -> StreamResult:
        acc = wire.ChunkAccumulator(start, time.monotonic)
        if self.settings.stream:
            stream = self._client.chat.completions.create(**body, stream=True)
            try:
                for chunk in stream:
                    acc.feed(chunk)
            finally:
                stream.close()
        else:
            acc.feed(wire.as_chunk(self._client.chat.completions.create(**body, stream=False)))
        res = acc.result(lambda: _estimate(messages, acc))
        if "response_format" in body:
            res = _constrained_call(res, body)
        return res

    def describe_server(self) -> str:
        """What an OpenAI-compatible server says about the model it serves (its `/models`: id,
        and llama.cpp's `meta` such as n_params and n_ctx_train), for the `model_server` tag;
        "" for OpenAI's own endpoint or a server that does not answer within 5 s."""
        if not self.settings.base_url:
            return ""
        try:
            listed = self._client.with_options(timeout=5.0, max_retries=0).models.list().data
        except Exception:  # a server without /models, or not up yet: the tag stays empty
            return ""
        parts = []
        for m in listed[:4]:
            meta = (m.model_extra or {}).get("meta") or {}
            facts = ", ".join(f"{k}={meta[k]}" for k in ("n_params", "n_ctx_train", "size") if k in meta)
            parts.append(f"{m.id} ({facts})" if facts else m.id)
        return "; ".join(parts)[:250]

    def close(self) -> None:
        self._client.close()


def _constrained_call(res: StreamResult, body: dict[str, Any]) -> StreamResult:
    """A constrained reply's text is its one tool call (none when it was cut or unparsable)."""
    schema = body["response_format"]["json_schema"]["schema"]["oneOf"]
    tools = [ToolSpec(s["properties"]["name"]["const"], "", s["properties"]["arguments"]) for s in schema]
    # An id from the request: unique within a trial (each request differs), the same on a replay.
    digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()[:12]
    call = constrained.parse_call(res.content, tools, f"call_{digest}")
    if call is None:
        return res
    stop = res.stop_reason if res.stop_reason == "max_tokens" else "tool_use"
    return replace(
        res, content="", tool_calls=(call,), stop_reason=stop, extra={**res.extra, "constrained": True}
    )


def _estimate(messages: tuple[Message, ...], acc: wire.ChunkAccumulator) -> Usage:
    """Local cl100k counts, for endpoints that send no usage (flagged `usage_estimated`)."""
    from bench.core.tokens import count_messages, count_text

    out = count_text("".join(acc.text)) + sum(
        count_text(s["name"] + s["arguments"]) for s in acc.calls.values()
    )
    return Usage(input=count_messages(messages), output=out)
