"""The real models' config (bench/providers/http/config.py): the transport's knobs are stated once,
in the `Transport` schema, whose defaults a mapping without a key gets and every real model composes."""

from __future__ import annotations

import pytest

from bench.config import compose, load
from bench.core.knobs import defaults
from bench.providers.http.config import ModelConfigError, ModelPrice, RealModel, RealModelConfig, Transport

PRICE = {"input": 1.0, "output": 1.0, "cache_read": 0.1, "cache_write": 1.0}


def test_transport_defaults_are_the_schemas_every_real_model_composes(api_keys):
    stated = defaults(Transport)
    bare = RealModelConfig.from_mapping({"model_id": "m", "window": 1000, "price": PRICE}, "openai")
    composed = RealModelConfig.from_mapping(
        load(compose(["model=openai", "model.model_id=m"])).model, "openai"
    )
    for key in ("timeout_s", "max_retries", "backoff_s", "max_concurrency"):
        assert getattr(bare, key) == getattr(composed, key) == stated[key], key
    assert (bare.backoff_s, bare.timeout_s) == (2.0, 120.0)


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        ("timeout_s", 0, "model.timeout_s: Input should be greater than 0, got 0"),
        ("max_retries", 1.5, "model.max_retries: Input should be a valid integer, got 1.5"),
        ("backoff_s", "2s", "model.backoff_s: Input should be a valid number, got '2s'"),
        ("max_concurrency", 0, "model.max_concurrency: Input should be greater than or equal to 1, got 0"),
        ("base_url", 8080, "model.base_url: Input should be a valid string, got 8080"),
    ],
)
def test_a_bad_transport_value_is_one_line_naming_the_key_and_the_file(key, value, line, api_keys):
    with pytest.raises(ModelConfigError) as e:
        RealModelConfig.from_mapping(
            {"name": "m", "model_id": "m", "window": 1000, "price": PRICE, key: value}, "openai"
        )
    assert str(e.value) == f"{line}; fix it in conf/model/m.yaml or the command line"


def test_every_real_model_knob_has_a_one_line_doc():
    for schema in (RealModel, ModelPrice, Transport.model_fields["rate_limit"].annotation):
        for key, field in schema.model_fields.items():  # type: ignore[union-attr]
            assert field.description and "\n" not in field.description, key


@pytest.mark.parametrize(
    ("change", "line"),
    [
        ({"window": "big"}, "model.window: Input should be a valid integer, got 'big'"),
        ({"window": 0}, "model.window: Input should be greater than or equal to 1, got 0"),
        ({"window": None}, "model.window: missing; set it in"),
        ({"max_output": 1.5}, "model.max_output: Input should be a valid integer, got 1.5"),
        ({"model_id": "???"}, "model.model_id: missing; set it in"),
        (
            {"price": {**PRICE, "cache_read": -0.1}},
            "model.price.cache_read: Input should be greater than or equal to 0",
        ),
        ({"price": {**PRICE, "tip": 1.0}}, "model.price.tip: unknown key 'tip'"),
        ({"tool_calls": "json"}, "model.tool_calls: Input should be 'native' or 'grammar', got 'json'"),
        ({"stream": "no"}, "model.stream: Input should be a valid boolean, got 'no'"),
        ({"temperature": 0.2}, "model.temperature: unknown key 'temperature'"),
    ],
)
def test_a_bad_model_value_is_one_line_naming_the_key(change, line, api_keys):
    with pytest.raises(ModelConfigError) as e:
        RealModelConfig.from_mapping(
            {"name": "m", "model_id": "m", "window": 1000, "price": PRICE, **change}, "openai"
        )
    assert str(e.value).startswith(line) and "\n" not in str(e.value)
    assert "conf/model/m.yaml or the command line" in str(e.value)


def test_a_real_models_keys_left_out_take_the_schemas_defaults(api_keys):
    cfg = RealModelConfig.from_mapping({"model_id": "m", "window": 1000.0, "price": PRICE}, "openai")
    assert (cfg.name, cfg.window, cfg.max_output, cfg.tool_calls, cfg.stream) == (
        "m",
        1000,
        4096,
        "native",
        True,
    )
    assert cfg.api_key_env == "OPENAI_API_KEY"
