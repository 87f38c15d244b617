"""A model's identity: provider + model id + endpoint, not the config group's name.

Two servers behind one `model=local` are two models; runs against them must not pass for
repeats of one another (the report once dropped one as a "duplicate (older run)" of the other).
The `model` tag of every trial, the study's plan and so every table of the report use this;
the config hash covers model_id and base_url anyway. What a server says about itself
(its `/models`: llama.cpp's model name with n_params, n_ctx_train and size; vLLM's served
model) is tagged beside it as `model_server` (bench/trial/runner.py, OpenAIProvider.describe_server).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

# Providers whose identity is their config name: the simulator and scripted models run here.
LOCAL = ("sim", "scripted", "replay")


def model_identity(model: Mapping[str, Any]) -> str:
    """`name` for the sim; `name:model_id` for a vendor's default endpoint; `name:model_id@host:port`."""
    name = str(model.get("name") or "")
    model_id = model.get("model_id")
    if model.get("provider") in LOCAL or not model_id or model_id == "???":
        return name
    base = model.get("base_url")
    where = urlparse(str(base)).netloc if base else ""
    return f"{name}:{model_id}@{where}" if where else f"{name}:{model_id}"
