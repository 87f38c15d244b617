"""Providers, imported lazily: a trial with the sim never imports an SDK."""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from bench.providers.base import Provider, ProviderError

PROVIDERS = {
    "sim": "bench.sim.provider:SimProvider",
    "anthropic": "bench.providers.anthropic:AnthropicProvider",
    "openai": "bench.providers.openai:OpenAIProvider",
    "replay": "bench.providers.replay:ReplayProvider",
}


def make_provider(model_cfg: Mapping) -> Provider:
    kind = model_cfg.get("provider")
    if kind not in PROVIDERS:
        raise ValueError(f"model.provider={kind!r} is not one of {', '.join(PROVIDERS)}; "
                         "pick a model with model=<name> (see conf/model/)")
    module_name, cls_name = PROVIDERS[kind].split(":")
    provider: Provider = getattr(importlib.import_module(module_name), cls_name).from_config(model_cfg)
    record = model_cfg.get("record")
    if record:
        from bench.providers.replay import RecordingProvider

        provider = RecordingProvider(provider, record)
    return provider


__all__ = ["Provider", "ProviderError", "make_provider"]
