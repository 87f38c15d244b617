"""conf/model/sim.yaml and oracle.yaml: loaded, documented, validated by key."""

from __future__ import annotations

import re

import pytest
import yaml
from omegaconf import OmegaConf

from bench.core.types import Price
from bench.sim.params import SimParams
from bench.sim.provider import SimProvider, from_config
from tests.helpers.sim_world import CONF


def load(name: str) -> dict:
    return yaml.safe_load((CONF / f"{name}.yaml").read_text())


@pytest.mark.parametrize("name", ["sim", "oracle"])
def test_configs_load_through_from_config(name):
    for cfg in (load(name), OmegaConf.load(CONF / f"{name}.yaml")):
        sim = from_config(cfg)
        assert isinstance(sim, SimProvider) and sim.model_id == name
        assert sim.window == 200000 and sim.time_scale == 0.0
        assert sim.price == Price(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)
    assert isinstance(SimProvider.from_config(load(name)), SimProvider)


def test_oracle_is_perfect():
    p = SimParams.from_mapping(load("oracle")["params"])
    assert p.recall_max == p.recall_recent == 1.0
    assert p.rot_max_drop == p.middle_dip == p.p_tempt == 0.0
    assert p.p_stale_replace_fail == p.p_stale_clobber == 0.0
    assert min(p.retain_plan, p.retain_task_invariant, p.retain_invariant, p.retain_fact, p.retain_check) == 1.0


def test_every_sim_parameter_is_documented():
    """Each parameter has an inline comment or the comment block right above it."""
    text = (CONF / "sim.yaml").read_text()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for key in load("sim")["params"]:
        (i,) = [j for j, ln in enumerate(lines) if re.match(rf"\s+{key}:", ln)]
        assert "#" in lines[i] or lines[i - 1].strip().startswith("#"), f"{key} has no comment in sim.yaml"
    for source in ("Lost in the Middle", "Context Rot"):
        assert source in text


def test_same_keys_in_sim_and_oracle():
    assert set(load("sim")) == set(load("oracle"))
    assert set(load("sim")["params"]) == set(load("oracle")["params"])


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
    cfg = load("sim")
    mutate(cfg)
    with pytest.raises(ValueError, match=key):
        from_config(cfg)


def test_make_provider_builds_the_sim_for_both_model_configs():
    from bench.providers import make_provider

    for name in ("sim", "oracle"):
        assert isinstance(make_provider(load(name)), SimProvider)
