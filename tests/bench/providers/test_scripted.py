"""model=adversary's knobs (`Adversary` in bench/providers/scripted.py): stated once, extended by
conf/model/adversary.yaml, every attack instantiated, every bound attacked with one line naming the key."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from bench.config import CONF_DIR, compose, load
from bench.core.knobs import ConfigError, defaults
from bench.providers import make_provider
from bench.providers.attacks import ATTACKS
from bench.providers.scripted import UNSTATED, Adversary, ScriptedProvider, as_turns

SOURCE = "fix it in conf/model/adversary.yaml or the command line"


def _provider(*overrides: str) -> ScriptedProvider:
    provider = make_provider(load(compose(["model=adversary", *overrides])).model)
    assert isinstance(provider, ScriptedProvider)
    return provider


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_every_attack_is_a_valid_option_and_plays_its_script(attack):
    provider = _provider(f"model.attack={attack}")
    assert provider.turns == as_turns(ATTACKS[attack]) and provider.model_id == "adversary"
    assert provider.when_done == "submit"


def test_the_yaml_keeps_only_names_and_the_composed_group_every_knob():
    own = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "model" / "adversary.yaml"))
    assert own == {
        "defaults": ["/knobs/model/adversary@_here_", "_self_"],
        "name": "adversary",
        "provider": "scripted",
    }
    stated = {k: v for k, v in defaults(Adversary).items() if k not in UNSTATED}
    assert dict(compose(["model=adversary"]).model) == {**stated, "name": "adversary", "provider": "scripted"}
    for key, field in Adversary.model_fields.items():
        assert field.description and "\n" not in field.description, key


def test_a_script_replaces_the_attack_and_every_other_knob_reaches_the_provider():
    script = "model.script=[[{name: run, args: {command: ls}}],[]]"
    provider = _provider(script, "model.when_done=stop", "+model.model_id=red-team", "model.window=1")
    assert [[c.name for c in turn] for turn in provider.turns] == [["run"], []]
    assert (provider.model_id, provider.when_done) == ("red-team", "stop")
    assert load(compose(["model=adversary", "model.max_output=1", "model.record=/tmp/c"])).model["record"]


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("model.attack=nope", "model.attack: no such attack; one of noop, traversal, "),
        ("model.attack=1", "model.attack: Input should be a valid string, got 1"),
        (
            "model.when_done=later",
            "model.when_done: Input should be 'submit' or 'stop', got 'later'; " + SOURCE,
        ),
        ("model.window=0", "model.window: Input should be greater than or equal to 1, got 0; " + SOURCE),
        ("model.window=big", "model.window: Input should be a valid integer"),
        (
            "model.max_output=0",
            "model.max_output: Input should be greater than or equal to 1, got 0; " + SOURCE,
        ),
        ("model.max_output=2.5", "model.max_output: Input should be a valid integer"),
        ("model.script=5", "model.script: Input should be a valid list, got 5; " + SOURCE),
        ("model.record=5", "model.record: Input should be a valid string, got 5; " + SOURCE),
        ("model.provider=sim", "model.provider: Input should be 'scripted', got 'sim'; " + SOURCE),
        (
            "+model.price=1",
            "model.price: unknown key 'price' in conf/model/adversary.yaml or the command line",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(override, line):
    cfg = load(compose(["model=adversary", override])).model
    with pytest.raises(ConfigError) as e:
        ScriptedProvider.from_config(cfg) if override.startswith("model.provider") else make_provider(cfg)
    assert str(e.value).startswith(line) and "\n" not in str(e.value)
    assert str(e.value).endswith(SOURCE) or "unknown key" in str(e.value)


def test_a_script_of_the_wrong_shape_names_the_turn():
    with pytest.raises(ValueError, match=r"^model\.script\[0\] must be a list of tool calls, got 5$"):
        _provider("model.script=[5]")
