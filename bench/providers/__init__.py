"""Providers, imported lazily: a trial with the sim never imports an SDK."""

from __future__ import annotations

from collections.abc import Mapping

from bench.core.registry import Registry
from bench.providers.base import Provider, ProviderError

PROVIDERS = Registry(
    "model.provider",
    {
        "sim": "bench.sim.provider:SimProvider",
        "anthropic": "bench.providers.anthropic:AnthropicProvider",
        "openai": "bench.providers.openai:OpenAIProvider",
        "replay": "bench.providers.replay:ReplayProvider",
        "scripted": "bench.providers.scripted:ScriptedProvider",
    },
    hint="pick a model with model=<name> (see conf/model/)",
    group="ctxbench.providers",
)


def make_provider(model_cfg: Mapping) -> Provider:
    provider: Provider = PROVIDERS.load(model_cfg.get("provider")).from_config(model_cfg)
    record = model_cfg.get("record")
    if record:
        from bench.providers.replay import RecordingProvider

        provider = RecordingProvider(provider, record)
    return provider


__all__ = ["PROVIDERS", "Provider", "ProviderError", "make_provider"]
