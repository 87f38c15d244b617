"""The `model` config group for real (HTTP) models: validated once, with errors that name the key.

Every key is stated once, with its type, default, bounds and a one-line doc: the transport's knobs
(base_url, timeouts, retries, backoff, concurrency, rate_limit, record) in `Transport`, registered
as `/knobs/model/transport`, which each real model's YAML extends; what the model is (model_id,
window, max_output, price, api_key_env, and for OpenAI-compatible servers tool_calls and stream)
in `RealModel` below. A cassette is replay's own key (bench/providers/replay.py).

API keys are read from the environment only, never from the config: the config names the
variable, so what MLflow logs as params is the variable's name, not its value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from bench.core import knobs
from bench.core.knobs import Knobs
from bench.core.types import Price, plain
from bench.providers.http.ratelimit import RateLimit

DEFAULT_KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


class Transport(Knobs):
    """How calls to a real (HTTP) model travel: the knobs every real model shares, stated once here.
    conf/model/{anthropic,openai,deepseek,local,replay}.yaml extend these defaults
    (`defaults: [/knobs/model/transport@_here_, _self_]`, bench/core/knobs.py) and state only what differs."""

    base_url: StrictStr | None = Field(default=None, description="null = the SDK's default endpoint")
    # 120, not 120.0: the default is what the composed config (and so the config hash) carries.
    timeout_s: Annotated[StrictFloat, Field(gt=0)] = Field(
        default=120, description="seconds per attempt: connect, and each read of the stream"
    )
    max_retries: Annotated[StrictInt, Field(ge=0)] = Field(
        default=4, description="retries on 429 / 5xx / timeouts / malformed replies; then provider_error"
    )
    backoff_s: Annotated[StrictFloat, Field(ge=0)] = Field(
        default=2.0, description="first backoff: 2, 4, 8, 16 s (jittered); a server's retry-after wins"
    )
    max_concurrency: Annotated[StrictInt, Field(ge=1)] = Field(
        default=4, description="calls in flight per machine for this model (shared by joblib workers)"
    )
    rate_limit: RateLimit = Field(
        default=RateLimit(), description="the account's limits per minute (bench/providers/http/ratelimit.py)"
    )
    time_scale: StrictFloat = Field(
        default=0.0, description="unused by real models (kept so every model group has the same keys)"
    )
    record: StrictStr | None = Field(
        default=None, description="a path: append every call to a cassette for model=replay"
    )


NonNegative = Annotated[StrictFloat, Field(ge=0)]


class ModelPrice(Knobs):
    """`model.price` of a real model, USD per million tokens: every one stated, since a price left out
    would silently misstate cost."""

    input: NonNegative = Field(description="USD per million uncached input tokens")
    output: NonNegative = Field(description="USD per million output tokens")
    cache_read: NonNegative = Field(description="USD per million input tokens read from the cache")
    cache_write: NonNegative = Field(description="USD per million input tokens written to the cache")


class RealModel(Transport):
    """The `model` group of a real model: what it is (id, window, price, key) on top of how its calls
    travel (Transport). Its own defaults are not registered as a node: a composed config carries only
    the keys its YAML states (adding tool_calls to model=anthropic would move its config hash), and a
    key left out gets its default here."""

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())  # `model_id` is a knob
    name: StrictStr | None = Field(
        default=None, description="the option's name (conf/model/<name>.yaml); null = model_id"
    )
    provider: StrictStr | None = Field(
        default=None,
        description="the provider that serves it: anthropic | openai (any OpenAI-compatible server)",
    )
    model_id: StrictStr = Field(description="the provider's model id, sent with every call")
    window: Annotated[knobs.Integer, Field(ge=1)] = Field(
        description="the context window in tokens; an arm may give the strategy less"
    )
    max_output: Annotated[knobs.Integer, Field(ge=1)] = Field(
        default=4096, description="tokens per reply; a longer reply stops with max_tokens"
    )
    price: ModelPrice = Field(description="USD per million tokens, by usage category")
    api_key_env: StrictStr | None = Field(
        default=None,
        description="the variable holding the API key; left "
        "out = the provider's own; null = none (a local base_url)",
    )
    tool_calls: Literal["native", "grammar"] = Field(
        default="native",
        description="native: the server's tool calling; grammar: the reply constrained to "
        "one published tool call (OpenAI-compatible servers)",
    )
    stream: StrictBool = Field(default=True, description="false for servers that cannot stream tool calls")


COMMON_KEYS = frozenset(RealModel.model_fields)  # what replay accepts besides its cassette


class ModelConfigError(ValueError):
    """A `model.*` value is wrong or missing; the message names the key and the fix."""


class MissingApiKeyError(ModelConfigError):
    """The environment variable that should hold the API key is not set."""


def check_keys(cfg: Mapping[str, Any], allowed: frozenset[str] | set[str], provider: str) -> None:
    unknown = set(cfg) - set(allowed)
    if unknown:
        raise ModelConfigError(
            f"model has unknown keys {sorted(unknown)} for provider {provider!r}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


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
        source = f"conf/model/{cfg.get('name') or provider}.yaml or the command line"
        if cfg.get("model_id") == "???":
            cfg["model_id"] = None  # Hydra's MISSING: then `model.model_id: missing`
        try:
            given = knobs.validate(RealModel, cfg, "model", source)
        except knobs.ConfigError as exc:
            raise ModelConfigError(str(exc)) from None
        if (given.provider or provider) != provider:
            raise ModelConfigError(
                f"model.provider is {given.provider!r}, but this is the {provider} provider"
            )
        base_url = given.base_url or None
        if "api_key_env" in cfg and cfg["api_key_env"] is None:  # null, not left out: no key at all
            if base_url is None:
                raise ModelConfigError(
                    "model.api_key_env may be null only with a model.base_url (a local "
                    "endpoint that needs no key)"
                )
            key_env = None
        else:
            key_env = given.api_key_env or DEFAULT_KEY_ENV.get(provider, "")
            if not key_env:
                raise ModelConfigError(
                    "model.api_key_env is missing: name the environment variable holding the key"
                )
        if given.tool_calls != "native" and provider != "openai":
            raise ModelConfigError(
                f"model.tool_calls={given.tool_calls!r} is for OpenAI-compatible servers, not "
                f"{provider}; use model.tool_calls=native"
            )
        return cls(
            name=given.name or given.model_id,
            provider=provider,
            model_id=given.model_id,
            window=given.window,
            max_output=given.max_output,
            price=Price(**given.price.model_dump()),
            base_url=base_url,
            api_key_env=key_env,
            timeout_s=float(given.timeout_s),
            max_retries=given.max_retries,
            backoff_s=float(given.backoff_s),
            max_concurrency=given.max_concurrency,
            tool_calls=given.tool_calls,
            stream=given.stream,
            rate_limit=given.rate_limit,
        )

    def api_key(self) -> str:
        """The key, from the environment only. Never store it elsewhere or log it."""
        if self.api_key_env is None:
            return "unused"  # local endpoints (vLLM, Ollama, llama.cpp) accept any placeholder
        return api_key_from_env(self.api_key_env)


def api_key_from_env(var: str) -> str:
    value = os.environ.get(var, "")
    if not value.strip():
        raise MissingApiKeyError(
            f"environment variable {var} is not set: export {var}=<your key> "
            f"(model.api_key_env names the variable; keys are read only from the environment)"
        )
    return value.strip()
