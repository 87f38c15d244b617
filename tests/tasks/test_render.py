"""The task repositories' templates (tasks/common/render.py): strict, all parsed, all shipped."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import jinja2
import pytest

from tasks import FAMILIES
from tasks.common.render import ENV, TASKS, render

ROOT = TASKS.parent


def _templates() -> list[str]:
    return sorted(p.relative_to(TASKS).as_posix() for p in TASKS.glob("*/templates/*.j2"))


def test_every_family_has_its_templates_folder():
    assert sorted(FAMILIES) == sorted({t.split("/")[0] for t in _templates()} - {"common"})


@pytest.mark.parametrize("path", _templates())
def test_every_template_parses_and_is_shipped(path):
    family, _, name = path.split("/")
    ENV.get_template(f"{family}/{name}")  # a syntax error raises here
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["tasks"]
    assert any(fnmatch.fnmatch(path, glob) for glob in data), f"{path} is not package data in pyproject.toml"


def test_a_missing_value_is_an_error_not_an_empty_string():
    with pytest.raises(jinja2.UndefinedError, match="'n' is undefined"):
        render("config_rename/settings.py.j2")
    with pytest.raises(jinja2.UndefinedError, match="has no attribute 'acc'"):
        render("config_rename/settings.py.j2", n=object())


def test_the_templates_are_read_from_the_package_folders():
    assert Path(ENV.get_template("common/callers.py.j2").filename).parent == TASKS / "common" / "templates"
