"""Each strategy knob is stated once: the dataclass holds the default, and its YAML in
conf/strategy/ names the same knobs with the same values (or null: "the dataclass's
default"). A YAML default that drifts from the code would make the same `strategy=x` mean two
things, depending on whether a trial came through Hydra or was built in a test."""

from __future__ import annotations

import dataclasses

import pytest
from omegaconf import OmegaConf

from bench.config import ROOT
from strategies import STRATEGIES

CONF = ROOT / "conf" / "strategy"


def _differs(stated, default) -> bool:
    # YAML has lists where a frozen dataclass keeps tuples: the same knob either way.
    if isinstance(stated, list) and isinstance(default, tuple):
        stated = tuple(stated)
    return stated != default


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_the_yaml_states_the_dataclass_knobs_with_its_defaults(name):
    yaml = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"))
    config_cls = STRATEGIES.load(name).config_class
    fields = {f.name: f for f in dataclasses.fields(config_cls) if f.init}
    assert set(yaml) == set(fields), f"conf/strategy/{name}.yaml and {config_cls.__name__} differ in knobs"
    defaults = config_cls()
    drifted = {k: (v, getattr(defaults, k)) for k, v in yaml.items() if v is not None and _differs(v, getattr(defaults, k))}
    assert drifted == {}, f"conf/strategy/{name}.yaml restates a default differently: {drifted}"


def test_every_strategy_has_its_yaml_and_no_yaml_is_orphaned():
    assert {p.stem for p in CONF.glob("*.yaml")} == set(STRATEGIES)


def test_the_check_sees_a_drifted_default(tmp_path):
    # The comparison above on a YAML that restates one default differently.
    config_cls = STRATEGIES.load("ledger").config_class
    stated = {f.name: getattr(config_cls(), f.name) for f in dataclasses.fields(config_cls)}
    stated["notes_cap_chars"] = stated["notes_cap_chars"] + 1
    drifted = {k for k, v in stated.items() if v is not None and _differs(v, getattr(config_cls(), k))}
    assert drifted == {"notes_cap_chars"}
