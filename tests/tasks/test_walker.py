"""The shipped check tools' one file walker (tasks/common/walker.py): stamped into every
family's tool, and what it walks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tasks import FAMILIES, generate
from tasks.common.walker import SOURCES, shipped


def _sources(root: Path, skip: set[str]):
    scope = {"ROOT": root, "SKIP": skip, "os": os, "Path": Path}
    exec(SOURCES, scope)  # the text exactly as the tools ship it
    return scope["sources"]


def test_the_walker_yields_sorted_files_and_skips_what_the_tool_names(tmp_path):
    for rel in (
        "b/z.py",
        "b/a.py",
        "b/sub/m.py",
        "b/notes.md",
        "b/__pycache__/x.py",
        "b/.hidden/y.py",
        "b/_private/w.py",
        "b/tests/t.py",
        "c.py",
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    sources = _sources(tmp_path, {"tests"})
    got = [p.relative_to(tmp_path).as_posix() for p in sources(["b", "c.py", "missing"])]
    assert got == ["b/a.py", "b/z.py", "b/sub/m.py", "c.py"]
    assert [p.name for p in sources(["b"], (".py", ".md"))] == ["a.py", "notes.md", "z.py", "m.py"]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_ships_its_tool_with_the_one_walker(family):
    spec = generate(family, 0)
    tools = [(p, t) for p, t in spec.files if p.startswith("tools/check_")]
    tools += [(p, t) for d in spec.drift for p, t in d.files if t and p.startswith("tools/check_")]
    assert tools
    for path, text in tools:
        assert text.count("def sources(") == 1 and SOURCES in text, path
        assert "@" not in text.replace("@property", ""), path  # every placeholder filled


def test_a_template_without_the_walker_is_a_clear_error():
    with pytest.raises(ValueError, match="@SOURCES@"):
        shipped("print(1)\n", {})
