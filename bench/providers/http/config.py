"""The `model` config group for real (HTTP) models: validated once, with errors that name the key.

Keys (one yaml per model under conf/model/):
  name, provider (anthropic|openai|replay|sim), model_id, window, max_output,
  price {input, output, cache_read, cache_write} in USD per million tokens,
  base_url (null = the SDK's default endpoint), api_key_env (the variable holding the key),
  timeout_s, max_retries, backoff_s, max_concurrency, rate_limit {rpm, input_tpm, output_tpm,
  count_cache_reads} (bench/providers/http/ratelimit.py), time_scale (unused by real models,
  kept for uniformity), record (null or a cassette path: wrap with RecordingProvider),
  cassette (replay only), and two for OpenAI-compatible servers that small local models need:
  tool_calls (native: the server's own tool calling; grammar: the reply is constrained to one
  call of a published tool by a JSON schema, bench/providers/wire/constrained.py) and stream
  (false for servers that cannot stream tool calls).

API keys are read from the environment only, never from the config: the config names the
variable, so what MLflow logs as params is the variable's name, not its value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.core.types import Price, plain
from bench.providers.http.ratelimit import RateLimit, RateLimitError

COMMON_KEYS = frozenset({
    "name", "provider", "model_id", "window", "max_output", "price", "base_url", "api_key_env",
    "timeout_s", "max_retries", "backoff_s", "max_concurrency", "rate_limit", "time_scale", "record",
    "tool_calls", "stream",
})
TOOL_CALLS = ("native", "grammar")
DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
# The transport's defaults (timeout, retries, backoff, concurrency) are stated once, in the yaml
# every real model composes; a mapping built without Hydra (a test, a tool) gets the same values.
TRANSPORT_YAML = Path(__file__).resolve().parents[3] / "conf" / "model" / "base" / "transport.yaml"
TRANSPORT = yaml.safe_load(TRANSPORT_YAML.read_text())


class ModelConfigError(ValueError):
    """A `model.*` value is wrong or missing; the message names the key and the fix."""


class MissingApiKeyError(ModelConfigError):
    """The environment variable that should hold the API key is not set."""


def check_keys(cfg: Mapping[str, Any], allowed: frozenset[str] | set[str], provider: str) -> None:
    unknown = set(cfg) - set(allowed)
    if unknown:
        raise ModelConfigError(f"model has unknown keys {sorted(unknown)} for provider {provider!r}; "
                               f"allowed: {', '.join(sorted(allowed))}")


def _num(cfg: Mapping[str, Any], key: str, default: Any, *, integer: bool = False, minimum: float = 0.0) -> Any:
    v = cfg.get(key, default)
    if v is None:
        v = default
    ok = isinstance(v, int) if integer else isinstance(v, int | float)
    if not ok or isinstance(v, bool) or v < minimum:
        kind = "an integer" if integer else "a number"
        raise ModelConfigError(f"model.{key} must be {kind} >= {minimum}, got {v!r}")
    return int(v) if integer else float(v)


@dataclass(frozen=True)
class RealModelConfig:
    name: str
    provider: str
    model_id: str
    window: int
    max_output: int
    price: Price
    base_url: str | None
    api_key_env: str | None  # None: an endpoint that needs no key (only with base_url)
    timeout_s: float
    max_retries: int
    backoff_s: float
    max_concurrency: int
    tool_calls: str = "native"
    stream: bool = True
    rate_limit: RateLimit = RateLimit()

    @classmethod
    def from_mapping(cls, cfg: Mapping[str, Any], provider: str) -> RealModelConfig:
        cfg = dict(plain(cfg))
        check_keys(cfg, COMMON_KEYS, provider)
        if cfg.get("provider", provider) != provider:
            raise ModelConfigError(f"model.provider is {cfg.get('provider')!r}, but this is the {provider} provider")
        model_id = cfg.get("model_id")
        if not isinstance(model_id, str) or not model_id or model_id == "???":
            raise ModelConfigError(f"model.model_id is missing: set the {provider} model id in conf/model/ "
                                   "or on the command line (model.model_id=...)")
        base_url = cfg.get("base_url") or None
        if "api_key_env" in cfg and cfg["api_key_env"] is None:
            if base_url is None:
                raise ModelConfigError("model.api_key_env may be null only with a model.base_url (a local "
                                       "endpoint that needs no key)")
            key_env = None
        else:
            key_env = str(cfg.get("api_key_env") or DEFAULT_KEY_ENV.get(provider, ""))
            if not key_env:
                raise ModelConfigError("model.api_key_env is missing: name the environment variable holding the key")
        tool_calls = cfg.get("tool_calls") or "native"
        if tool_calls not in TOOL_CALLS:
            raise ModelConfigError(f"model.tool_calls={tool_calls!r} is not one of {', '.join(TOOL_CALLS)}; "
                                   "grammar constrains replies to the published tools (OpenAI-compatible servers)")
        if tool_calls != "native" and provider != "openai":
            raise ModelConfigError(f"model.tool_calls={tool_calls!r} is for OpenAI-compatible servers, not {provider}; "
                                   "use model.tool_calls=native")
        stream = cfg.get("stream", True)
        if not isinstance(stream, bool):
            raise ModelConfigError(f"model.stream must be true or false, got {stream!r}")
        if cfg.get("window") is None:
            raise ModelConfigError("model.window is missing: set the context window in tokens in conf/model/ "
                                   "or on the command line (model.window=...)")
        return cls(
            name=str(cfg.get("name") or model_id), provider=provider, model_id=model_id,
            window=_num(cfg, "window", 0, integer=True, minimum=1),
            max_output=_num(cfg, "max_output", 4096, integer=True, minimum=1),
            price=_price(cfg.get("price")), base_url=str(base_url) if base_url else None,
            api_key_env=key_env, timeout_s=_num(cfg, "timeout_s", TRANSPORT["timeout_s"], minimum=0.001),
            max_retries=_num(cfg, "max_retries", TRANSPORT["max_retries"], integer=True),
            backoff_s=_num(cfg, "backoff_s", TRANSPORT["backoff_s"]),
            max_concurrency=_num(cfg, "max_concurrency", TRANSPORT["max_concurrency"], integer=True, minimum=1),
            tool_calls=str(tool_calls), stream=stream,
            rate_limit=_rate_limit(cfg.get("rate_limit")),
        )

    def api_key(self) -> str:
        """The key, from the environment only. Never store it elsewhere or log it."""
        if self.api_key_env is None:
            return "unused"  # local endpoints (vLLM, Ollama, llama.cpp) accept any placeholder
        return api_key_from_env(self.api_key_env)


def _rate_limit(cfg: Any) -> RateLimit:
    try:
        return RateLimit.from_mapping(cfg)
    except RateLimitError as exc:
        raise ModelConfigError(str(exc)) from None


def _price(price: Any) -> Price:
    try:
        return Price.from_mapping(price)
    except ValueError as exc:
        raise ModelConfigError(str(exc)) from None


def api_key_from_env(var: str) -> str:
    value = os.environ.get(var, "")
    if not value.strip():
        raise MissingApiKeyError(f"environment variable {var} is not set: export {var}=<your key> "
                                 f"(model.api_key_env names the variable; keys are read only from the environment)")
    return value.strip()
