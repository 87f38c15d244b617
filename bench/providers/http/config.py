"""The `model` config group for real (HTTP) models: validated once, with errors that name the key.

Keys (one yaml per model under conf/model/): name, provider (anthropic|openai|replay|sim),
model_id, window, max_output, price {input, output, cache_read, cache_write} in USD per million
tokens, api_key_env (the variable holding the key), cassette (replay only), and two for
OpenAI-compatible servers that small local models need: tool_calls (native: the server's own tool
calling; grammar: the reply is constrained to one call of a published tool by a JSON schema,
bench/providers/wire/constrained.py) and stream (false for servers that cannot stream tool calls).
The transport's knobs (base_url, timeouts, retries, backoff, concurrency, rate_limit, record) and
their defaults are stated once, in the `Transport` schema below.

API keys are read from the environment only, never from the config: the config names the
variable, so what MLflow logs as params is the variable's name, not its value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field, StrictFloat, StrictInt, StrictStr

from bench.core import knobs
from bench.core.knobs import Knobs
from bench.core.types import Price, plain
from bench.providers.http.ratelimit import RateLimit

TOOL_CALLS = ("native", "grammar")
DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


class Transport(Knobs):
    """How calls to a real (HTTP) model travel: the knobs every real model shares, stated once here.
    conf/model/{anthropic,openai,deepseek,local,replay}.yaml extend these defaults
    (`defaults: [/knobs/model/transport@_here_, _self_]`, bench/core/knobs.py) and state only what differs."""

    base_url: StrictStr | None = Field(default=None, description="null = the SDK's default endpoint")
    # 120, not 120.0: the default is what the composed config (and so the config hash) carries.
    timeout_s: Annotated[StrictFloat, Field(gt=0)] = Field(
        default=120, description="seconds per attempt: connect, and each read of the stream")
    max_retries: Annotated[StrictInt, Field(ge=0)] = Field(
        default=4, description="retries on 429 / 5xx / timeouts / malformed replies; then provider_error")
    backoff_s: Annotated[StrictFloat, Field(ge=0)] = Field(
        default=2.0, description="first backoff: 2, 4, 8, 16 s (jittered); a server's retry-after wins")
    max_concurrency: Annotated[StrictInt, Field(ge=1)] = Field(
        default=4, description="calls in flight per machine for this model (shared by joblib workers)")
    rate_limit: RateLimit = Field(default=RateLimit(), description="the account's limits per minute "
                                                                   "(bench/providers/http/ratelimit.py)")
    time_scale: StrictFloat = Field(default=0.0, description="unused by real models (kept so every model "
                                                             "group has the same keys)")
    record: StrictStr | None = Field(default=None, description="a path: append every call to a cassette "
                                                               "for model=replay")


MODEL_KEYS = frozenset({"name", "provider", "model_id", "window", "max_output", "price", "api_key_env",
                        "tool_calls", "stream"})
COMMON_KEYS = MODEL_KEYS | frozenset(Transport.model_fields)


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
        try:
            transport = knobs.validate(Transport, {k: v for k, v in cfg.items() if k in Transport.model_fields},
                                       "model", f"conf/model/{cfg.get('name') or provider}.yaml or the command line")
        except knobs.ConfigError as exc:
            raise ModelConfigError(str(exc)) from None
        if cfg.get("provider", provider) != provider:
            raise ModelConfigError(f"model.provider is {cfg.get('provider')!r}, but this is the {provider} provider")
        model_id = cfg.get("model_id")
        if not isinstance(model_id, str) or not model_id or model_id == "???":
            raise ModelConfigError(f"model.model_id is missing: set the {provider} model id in conf/model/ "
                                   "or on the command line (model.model_id=...)")
        base_url = transport.base_url or None
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
            api_key_env=key_env, timeout_s=float(transport.timeout_s), max_retries=transport.max_retries,
            backoff_s=float(transport.backoff_s), max_concurrency=transport.max_concurrency,
            tool_calls=str(tool_calls), stream=stream, rate_limit=transport.rate_limit,
        )

    def api_key(self) -> str:
        """The key, from the environment only. Never store it elsewhere or log it."""
        if self.api_key_env is None:
            return "unused"  # local endpoints (vLLM, Ollama, llama.cpp) accept any placeholder
        return api_key_from_env(self.api_key_env)


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
