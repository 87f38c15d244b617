"""conf/model/sim.yaml and oracle.yaml: composed, documented, validated by key; the oracle
states only what it changes."""

from __future__ import annotations

import re

import pytest
import yaml
from omegaconf import OmegaConf

from bench.core.types import Price
from bench.sim.params import SimParams
from bench.sim.provider import SimProvider, from_config
from tests.helpers.configs import MODEL_CONF, model_config


@pytest.mark.parametrize("name", ["sim", "oracle"])
def test_configs_load_through_from_config(name):
    for cfg in (model_config(name), OmegaConf.create(model_config(name))):
        sim = from_config(cfg)
        assert isinstance(sim, SimProvider) and sim.model_id == name
        assert sim.window == 200000 and sim.time_scale == 0.0
        assert sim.price == Price(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)
    assert isinstance(SimProvider.from_config(model_config(name)), SimProvider)


def test_oracle_is_perfect():
    p = SimParams.from_mapping(model_config("oracle")["params"])
    assert p.recall_max == p.recall_recent == 1.0
    assert p.rot_max_drop == p.middle_dip == p.p_tempt == 0.0
    assert p.p_stale_replace_fail == p.p_stale_clobber == 0.0
    assert (
        min(p.retain_plan, p.retain_task_invariant, p.retain_invariant, p.retain_fact, p.retain_check) == 1.0
    )


def test_every_knob_is_stated_once_with_its_doc_and_the_yaml_keeps_only_names():
    """The schema states each knob (default, bounds, a one-line doc); sim.yaml names the model."""
    from bench.sim.params import UNSTATED, Mechanisms, SimModel, SimPrice

    for schema in (SimModel, SimParams, Mechanisms, SimPrice):
        for name, field in schema.model_fields.items():
            assert field.description and "\n" not in field.description, (
                f"{schema.__name__}.{name} has no one-line doc"
            )
    own = yaml.safe_load((MODEL_CONF / "sim.yaml").read_text())
    assert own.pop("defaults") == ["/knobs/model/sim@_here_", "_self_"]
    assert own == {"name": "sim", "provider": "sim"}
    composed = model_config("sim")  # every knob the schema states, at its default, but the unstated ones
    assert set(composed) == set(SimModel.model_fields) - set(UNSTATED)
    assert composed["params"] == {k: f.default for k, f in SimParams.model_fields.items()}
    assert type(composed["params"]["rot_half_tokens"]) is int  # as the YAML had it: the config hash stays
    source = __import__("bench.sim.params", fromlist=["x"]).__file__
    text = open(source).read()
    for cited in ("Lost in the Middle", "Context Rot"):  # why the defaults are what they are
        assert cited in text


def test_oracle_extends_sim_and_states_only_what_differs():
    own = yaml.safe_load((MODEL_CONF / "oracle.yaml").read_text())
    assert own.pop("defaults") == ["sim", "_self_"]
    sim, oracle = model_config("sim"), model_config("oracle")
    assert set(sim) == set(oracle) and set(sim["params"]) == set(oracle["params"])
    assert own.pop("name") == oracle["name"] == "oracle"
    assert set(own) == {"params"}
    for key, value in own["params"].items():
        assert value != sim["params"][key], f"oracle.yaml repeats sim's {key}"
    same = {k for k in sim["params"] if k not in own["params"]}
    assert all(oracle["params"][k] == sim["params"][k] for k in same)


@pytest.mark.parametrize(
    "mutate, key",
    [
        (lambda c: c["params"].update(recal_max=0.9), "model.params.recal_max: unknown key"),
        (
            lambda c: c["params"].update(p_tempt=1.5),
            "model.params.p_tempt: Input should be less than or equal to 1",
        ),
        (lambda c: c["params"].update(p_tempt=True), "model.params.p_tempt: Input should be a valid number"),
        (lambda c: c["params"].update(p_tempt="0.5"), "model.params.p_tempt: Input should be a valid number"),
        (
            lambda c: c["params"].update(max_attempts=2.5),
            "model.params.max_attempts: Input should be a valid integer",
        ),
        (
            lambda c: c["params"].update(max_attempts=0),
            "model.params.max_attempts: Input should be greater than 0",
        ),
        (
            lambda c: c["params"].update(rot_half_tokens=-1),
            "model.params.rot_half_tokens: Input should be greater than 0",
        ),
        (
            lambda c: c["price"].update(cache_read=-0.1),
            "model.price.cache_read: Input should be greater than or equal",
        ),
        (lambda c: c["price"].update(tip=1.0), "model.price.tip: unknown key"),
        (lambda c: c.update(temperature=0.7), "model.temperature: unknown key"),
        (lambda c: c.update(draws="fresh"), "model.draws: Input should be 'shared' or 'independent'"),
        (lambda c: c.update(provider="openai"), "model.provider: Input should be 'sim' or 'oracle'"),
        (lambda c: c.update(window=0), "model.window: Input should be greater than 0"),
        (
            lambda c: c["mechanisms"].update(temptation="no"),
            "model.mechanisms.temptation: Input should be a valid boolean",
        ),
    ],
)
def test_bad_configs_raise_one_line_naming_the_key(mutate, key):
    cfg = model_config("sim")
    mutate(cfg)
    with pytest.raises(ValueError, match=re.escape(key)) as err:
        from_config(cfg)
    assert "\n" not in str(err.value) and "conf/model/sim.yaml or the command line" in str(err.value)


def test_a_knob_left_out_or_null_takes_the_schemas_default():
    cfg = model_config("sim")
    cfg["params"].pop("p_tempt")
    cfg["draws"] = None  # null: the default
    sim = from_config(cfg)
    assert sim.params == from_config(model_config("sim")).params and sim._stream is None  # shared draws
    assert SimParams.from_mapping({"max_attempts": 3.0}).max_attempts == 3  # a whole float is that int
    assert isinstance(SimParams.from_mapping({"cache_ttl_s": 300}).cache_ttl_s, float)


def test_make_provider_builds_the_sim_for_both_model_configs():
    from bench.providers import make_provider

    for name in ("sim", "oracle"):
        assert isinstance(make_provider(model_config(name)), SimProvider)
