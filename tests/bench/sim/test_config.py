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
    assert min(p.retain_plan, p.retain_task_invariant, p.retain_invariant, p.retain_fact, p.retain_check) == 1.0


def test_every_sim_parameter_is_documented():
    """Each parameter has an inline comment or the comment block right above it."""
    text = (MODEL_CONF / "sim.yaml").read_text()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for key in model_config("sim")["params"]:
        (i,) = [j for j, ln in enumerate(lines) if re.match(rf"\s+{key}:", ln)]
        assert "#" in lines[i] or lines[i - 1].strip().startswith("#"), f"{key} has no comment in sim.yaml"
    for source in ("Lost in the Middle", "Context Rot"):
        assert source in text


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


@pytest.mark.parametrize("mutate, key", [
    (lambda c: c["params"].update(recal_max=0.9), "recal_max"),
    (lambda c: c["params"].pop("p_tempt"), "p_tempt"),
    (lambda c: c["params"].update(p_tempt=1.5), "p_tempt"),
    (lambda c: c["params"].update(max_attempts=2.5), "max_attempts"),
    (lambda c: c["price"].pop("cache_read"), "cache_read"),
    (lambda c: c["price"].update(tip=1.0), "tip"),
    (lambda c: c.update(temperature=0.7), "temperature"),
    (lambda c: c.pop("params"), "params"),
])
def test_bad_configs_raise_naming_the_key(mutate, key):
    cfg = model_config("sim")
    mutate(cfg)
    with pytest.raises(ValueError, match=key):
        from_config(cfg)


def test_make_provider_builds_the_sim_for_both_model_configs():
    from bench.providers import make_provider

    for name in ("sim", "oracle"):
        assert isinstance(make_provider(model_config(name)), SimProvider)
