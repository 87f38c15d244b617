"""bench/core/knobs.py: a schema's defaults as plain data, registered for the YAML to extend, and
validation errors of one line naming the key, what is wrong and where to fix it."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import pytest
from hydra.core.config_store import ConfigStore
from pydantic import Field, StrictInt

from bench.core.knobs import ConfigError, Knobs, defaults, store, validate


class Limits(Knobs):
    rpm: Annotated[StrictInt, Field(ge=1)] | None = Field(
        None, description="requests per minute; null = not limited"
    )


class Demo(Knobs):
    name: Literal["demo"] = "demo"
    turns: tuple[int, ...] = Field((), description="turn numbers")
    timeout_s: int = Field(900, description="an int default stays an int: 900, never 900.0")
    share: float = Field(0.5, gt=0, le=1, description="a fraction")
    limits: Limits = Field(Limits(), description="a nested group")


SOURCE = "conf/demo/demo.yaml or the command line"


def test_defaults_are_plain_data_as_yaml_states_them():
    assert defaults(Demo) == {
        "name": "demo",
        "turns": [],
        "timeout_s": 900,
        "share": 0.5,
        "limits": {"rpm": None},
    }
    assert isinstance(defaults(Demo)["timeout_s"], int)


def test_store_registers_the_defaults_under_knobs():
    store("demo/demo", Demo)
    node = ConfigStore.instance().load("knobs/demo/demo.yaml").node
    assert dict(node) == {
        "name": "demo",
        "turns": [],
        "timeout_s": 900,
        "share": 0.5,
        "limits": {"rpm": None},
    }


def test_a_null_takes_the_default_and_values_are_validated():
    assert validate(Demo, {"share": None, "turns": [3]}, "demo", SOURCE) == Demo(turns=(3,))


@pytest.mark.parametrize(
    "given, line",
    [
        ({"share": 1.5}, "demo.share: Input should be less than or equal to 1, got 1.5; fix it in " + SOURCE),
        (
            {"shares": 1},
            "demo.shares: unknown key 'shares' in " + SOURCE + "; known keys: limits, name, share, "
            "timeout_s, turns",
        ),
        (
            {"limits": {"rpm": 0}},
            "demo.limits.rpm: Input should be greater than or equal to 1, got 0; fix it in " + SOURCE,
        ),
        ({"limits": {"rmp": 5}}, "demo.limits.rmp: unknown key 'rmp' in " + SOURCE + "; known keys: rpm"),
        (
            {"share": 2, "timeout_s": "x"},
            "demo.timeout_s: Input should be a valid integer, unable to parse string as an "
            "integer, got 'x' (and 1 more); fix it in " + SOURCE,
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key_and_the_fix(given, line):
    with pytest.raises(ConfigError) as e:
        validate(Demo, given, "demo", SOURCE)
    assert str(e.value) == line


def test_a_plug_ins_dataclass_refuses_unknown_keys_too():
    @dataclasses.dataclass(frozen=True)
    class Plain:
        keep: int = 20

    assert validate(Plain, {"keep": 12}, "strategy", SOURCE) == Plain(12)
    with pytest.raises(ConfigError, match=r"^strategy\.kep: unknown key 'kep' in .*; known keys: keep$"):
        validate(Plain, {"kep": 12}, "strategy", SOURCE)
