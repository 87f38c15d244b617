"""Knobs: every config option is stated once, in a typed schema (a frozen pydantic model) with its
default, bounds and a one-line doc; the YAML under conf/ keeps only names and real overrides
(docs/design.md §4, "Knobs").

A schema serves the config twice. `store` registers its defaults, as plain data, in Hydra's
ConfigStore under `knobs/<group>/<name>`; the option's YAML merges them under its own keys
(`defaults: [/knobs/strategy/ledger@_here_, _self_]`). So the composed config carries every knob
as it did when the YAML restated them all: the command line can override any of them, and the
config hash (taken over the resolved config, bench/config.py) does not move when a default
leaves the YAML. Plain data and not an OmegaConf structured config: OmegaConf would retype
values (900 -> 900.0), which moves hashes, and knows no bounds. `validate` then turns the
composed group into the frozen object, raising one line that names the key and how to fix it.

A key set to null takes the schema's default (it stays null in the resolved config, as before).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, StrictInt, ValidationError
from pydantic_core import PydanticUndefined, to_jsonable_python


class ConfigError(ValueError):
    """A config value is wrong; the message names the key and how to fix it."""


def _whole(value: Any) -> Any:
    # 3.0 is 3; 2.5 stays an error
    return int(value) if isinstance(value, float) and value.is_integer() else value


# An integer knob: a whole float (256.0, as YAML or an override may write it) is that int; a bool is not.
Integer = Annotated[StrictInt, BeforeValidator(_whole)]


class Knobs(BaseModel):
    """Base of every schema: frozen, and an unknown key is an error (a typo is never ignored)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def defaults(schema: type[BaseModel]) -> dict[str, Any]:
    """The schema's defaults as plain data (tuples as lists, as YAML has them); a knob without a
    default is left out (it must come from the YAML)."""
    return {
        name: _plain(field.default)
        for name, field in schema.model_fields.items()
        if field.default is not PydanticUndefined
    }


def _plain(value: Any) -> Any:
    """A default as plain data, a nested schema's values as they were written: serializing the
    model would turn an int default of a float knob into a float (64000 -> 64000.0)."""
    if isinstance(value, BaseModel):
        return {name: _plain(getattr(value, name)) for name in type(value).model_fields}
    return to_jsonable_python(value)


def store(node: str, schema: type[BaseModel]) -> None:
    """Register the schema's defaults as the config node `/knobs/<node>` (`strategy/ledger`,
    `arm`), which the defaults list of the YAML that uses them names. Hydra hands the ConfigStore
    to launched jobs."""
    from hydra.core.config_store import ConfigStore

    group, _, name = f"knobs/{node}".rpartition("/")
    ConfigStore.instance().store(group=group, name=name, node=defaults(schema))


def validate(schema: type[Any], given: Mapping[str, Any], where: str, source: str) -> Any:
    """`given` (null keys dropped: they take the default) as the frozen `schema`, or a ConfigError
    of one line: `<where>.<key>: <what is wrong>, got <value>; fix it in <source>`. `where` is the
    group's path in the config (`strategy`, `model`), `source` where its knobs are set
    (`conf/strategy/ledger.yaml or the command line`)."""
    given = {str(k): v for k, v in given.items() if v is not None}
    try:
        if issubclass(schema, BaseModel):
            return schema.model_validate(given)
        # A plug-in's frozen dataclass (docs/plugins.md) validates its own values; unknown keys are refused here.
        known = [f.name for f in dataclasses.fields(schema) if f.init]
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ConfigError(
                f"{where}.{unknown[0]}: unknown key {unknown[0]!r} in {source}; known keys: "
                f"{', '.join(sorted(known))}"
            )
        return schema(**given)
    except ValidationError as exc:
        raise ConfigError(one_line(exc, schema, where, source)) from None


def one_line(exc: ValidationError, schema: type[Any], where: str, source: str) -> str:
    err = exc.errors()[0]
    key = ".".join(str(part) for part in (where, *err["loc"]))
    if err["type"] == "extra_forbidden":
        return f"{key}: unknown key {str(err['loc'][-1])!r} in {source}; known keys: " + ", ".join(
            sorted(_inner(schema, err["loc"][:-1]).model_fields)
        )
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    if err["type"] == "missing":
        return f"{key}: missing{more}; set it in {source}"
    msg = err["msg"].removeprefix("Value error, ")
    got = repr(err["input"])
    got = got if len(got) <= 80 else got[:77] + "..."
    return f"{key}: {msg}, got {got}{more}; fix it in {source}"


def _inner(schema: type[Any], loc: tuple[Any, ...]) -> type[BaseModel]:
    """The nested schema an error's location points into (the unknown key's siblings)."""
    for part in loc:
        field = schema.model_fields.get(str(part))
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            break
        schema = annotation
    return schema
