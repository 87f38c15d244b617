"""Each strategy knob is stated once: the schema (`config_class`, bench/core/knobs.py) holds its
default, bounds and doc, and the YAML in conf/strategy/ keeps the name and real overrides only.
A YAML restating a default would be a second statement free to drift from the first."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from bench.config import ROOT, compose, load
from bench.core.knobs import defaults
from strategies import STRATEGIES

CONF = ROOT / "conf" / "strategy"


def restated(name: str, stated: dict) -> dict:
    """The keys of `stated` that repeat the schema's default."""
    schema = defaults(STRATEGIES.load(name).config_class)
    return {k: v for k, v in stated.items() if k != "name" and k in schema and schema[k] == v}


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_the_yaml_keeps_only_the_name_and_real_overrides(name):
    stated = OmegaConf.to_container(OmegaConf.load(CONF / f"{name}.yaml"))
    assert isinstance(stated, dict) and stated["name"] == name
    assert stated.pop("defaults") == [f"/knobs/strategy/{name}@_here_", "_self_"]
    fields = set(STRATEGIES.load(name).config_class.model_fields)
    assert set(stated) <= fields, f"conf/strategy/{name}.yaml states keys its schema does not have"
    assert restated(name, stated) == {}, f"conf/strategy/{name}.yaml restates a default"


def test_the_check_sees_a_restated_default():
    assert restated("ledger", {"name": "ledger", "notes_cap_chars": 400, "tree": False}) == {
        "notes_cap_chars": 400
    }


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_knob_has_a_default_and_a_one_line_doc(name):
    for key, field in STRATEGIES.load(name).config_class.model_fields.items():
        assert not field.is_required(), f"{name}.{key} has no default"
        if key != "name":
            assert field.description and "\n" not in field.description, f"{name}.{key} has no one-line doc"


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_the_resolved_config_carries_every_knob_at_its_default(name):
    # What the hash and the logged params see: every knob, as when the YAML restated them all.
    resolved = load(compose([f"strategy={name}"])).strategy
    assert dict(resolved) == defaults(STRATEGIES.load(name).config_class)


def test_an_override_wins_over_the_default_and_a_null_stays_null():
    resolved = load(compose(["strategy=ledger", "strategy.tree=false", "strategy.threshold=null"])).strategy
    assert (resolved["tree"], resolved["threshold"], resolved["drift_note"]) == (False, None, True)


def test_every_strategy_has_its_yaml_and_no_yaml_is_orphaned():
    assert {p.stem for p in CONF.glob("*.yaml")} == set(STRATEGIES)
