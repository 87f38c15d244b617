"""The real models' config (bench/providers/http/config.py): what a mapping without a key gets."""

from __future__ import annotations

import yaml

from bench.config import compose, load
from bench.providers.http.config import TRANSPORT_YAML, RealModelConfig


def test_transport_defaults_are_the_yaml_every_real_model_composes(api_keys):
    """backoff_s (and the other transport knobs) are stated once: conf/model/base/transport.yaml."""
    stated = yaml.safe_load(TRANSPORT_YAML.read_text())
    price = {"input": 1.0, "output": 1.0, "cache_read": 0.1, "cache_write": 1.0}
    bare = RealModelConfig.from_mapping({"model_id": "m", "window": 1000, "price": price}, "openai")
    composed = RealModelConfig.from_mapping(load(compose(["model=openai", "model.model_id=m"])).model, "openai")
    for key in ("timeout_s", "max_retries", "backoff_s", "max_concurrency"):
        assert getattr(bare, key) == getattr(composed, key) == stated[key], key
    assert bare.backoff_s == 2.0
