"""Helpers shared by the provider, server, fault and canary tests: model configs pointing at an
in-process loopback server, a scripted backend, the toy-task sim backend. The keys those
configs name are set by the `api_keys` fixture (tests/helpers/fixtures.py)."""

from __future__ import annotations

import threading
from typing import Any

from bench.core.types import Completion, Message, ToolCall, ToolSpec, Usage, request_hash
from bench.providers.anthropic import AnthropicProvider
from bench.providers.openai import OpenAIProvider
from bench.serve.backend import SimBackend
from bench.serve.server import LoopbackServer
from tests.helpers.fixtures import API_KEYS
from tests.helpers.sim_world import make_task, provider

KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
KEYS = {kind: API_KEYS[var] for kind, var in KEY_ENV.items()}  # what the `api_keys` fixture sets
PRICE = {"input": 2.0, "output": 10.0, "cache_read": 0.2, "cache_write": 2.5}
KINDS = ("anthropic", "openai")


def model_cfg(kind: str, srv: LoopbackServer | None = None, **over: Any) -> dict[str, Any]:
    url = None if srv is None else (srv.url if kind == "anthropic" else srv.url + "/v1")
    cfg = {
        "name": f"{kind}-test",
        "provider": kind,
        "model_id": f"{kind}-model",
        "window": 200000,
        "max_output": 4096,
        "price": dict(PRICE),
        "base_url": url,
        "api_key_env": KEY_ENV[kind],
        "timeout_s": 5.0,
        "max_retries": 2,
        "backoff_s": 0.01,
        "max_concurrency": 4,
        "time_scale": 0.0,
        "record": None,
    }
    return {**cfg, **over}


class Sleeps(list):
    """A stand-in for time.sleep that records the waits instead of sleeping."""

    def __call__(self, s: float) -> None:
        self.append(s)


def make(
    kind: str, srv: LoopbackServer, sleep: Any = None, **over: Any
) -> AnthropicProvider | OpenAIProvider:
    cls = AnthropicProvider if kind == "anthropic" else OpenAIProvider
    kwargs = {"sleep": sleep} if sleep is not None else {}
    return cls.from_config(model_cfg(kind, srv, **over), **kwargs)


class ScriptedBackend:
    """Answers every call with `reply` (a read_file tool call by default) and counts calls."""

    def __init__(self, reply: Completion | None = None) -> None:
        self.reply = reply
        self.calls: list[tuple[tuple[Message, ...], int, int | None]] = []
        self._lock = threading.Lock()

    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion:
        with self._lock:
            self.calls.append((messages, seed, cache_breakpoint))
        if self.reply is not None:
            return self.reply
        return Completion(
            content="Reading the api first.",
            tool_calls=(ToolCall("call_1", "read_file", {"path": "a.py"}),),
            stop_reason="tool_use",
            usage=Usage(input=120, output=30, cache_read=1024, cache_write=256),
            latency_s=0.5,
            ttft_s=0.2,
            model_id="scripted",
            request_hash=request_hash(messages, tools, max_tokens, seed),
        )

    def count_tokens(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> int:
        return 42 * len(messages)


def toy_backend() -> SimBackend:
    """The real sim, with the toy task of tests/helpers/sim_world.py, one instance per conversation."""
    task = make_task()
    return SimBackend({}, factory=lambda cfg: provider("sim", task))


CONVERSATION = (
    Message("system", "You are careful."),
    Message("user", "[task:toy/1] Do the thing."),
    Message(
        "assistant",
        "",
        (ToolCall("call_a", "read_file", {"path": "a.py"}), ToolCall("call_b", "grep", {"pattern": "def "})),
    ),
    Message("tool", '<file path="a.py" sha="abc">\nx = 1\n</file>', tool_call_id="call_a", name="read_file"),
    Message("tool", "a.py:1:x = 1", tool_call_id="call_b", name="grep"),
    Message("user", "CURRENT STEP [step:s01] edit it"),
    Message(
        "assistant",
        "Editing now.",
        (ToolCall("call_c", "edit_file", {"path": "a.py", "search": "x = 1", "replace": "x = 2 # ünï"}),),
    ),
    Message("tool", "edited a.py", tool_call_id="call_c", name="edit_file"),
    Message("assistant", "Done, submitting next."),
    Message("system", "A harness note in system voice."),
    Message("user", "continue"),
)
