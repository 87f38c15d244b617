"""The one path canonicaliser (bench/sandbox/paths.py) and the forced restore of protected files."""

from __future__ import annotations

import os

import pytest

from bench.sandbox.paths import PathRefused, Protected, canonical, resolve

PROTECTED = Protected(("tests/**", "tools/**", "pytest.ini"))


@pytest.mark.parametrize(
    ("raw", "canon"),
    [
        ("a.py", "a.py"),
        ("./a.py", "a.py"),
        ("src//pkg/./m.py", "src/pkg/m.py"),
        ("src/x/../m.py", "src/m.py"),
        ("gateway/../tests/test_x.py", "tests/test_x.py"),
        ("a/b/../../c", "c"),
        ("a/", "a"),
    ],
)
def test_canonical_forms(raw, canon):
    assert canonical(raw) == canon


@pytest.mark.parametrize(
    "raw",
    [
        "",
        " ",
        "/etc/passwd",
        "/work/a.py",
        "..",
        "../a",
        "a/../../b",
        ".",
        "./",
        "a\0b",
        ".git/config",
        "src/.git/hooks",
        ".GIT/HEAD",
        None,
        3,
    ],
)
def test_refused_paths(raw):
    with pytest.raises(PathRefused):
        canonical(raw)


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_a.py",
        "tests",
        "tests/sub/x.py",
        "TESTS/test_a.py",
        "Tools/x.py",
        "pytest.INI",
        "ｔｅｓｔｓ/test_a.py",
        "te\u200bsts/a.py",
        "tests\\test_a.py",
        "tests/a.py",
    ],
)
def test_protected_globs_match_case_and_unicode_look_alikes(path):
    assert PROTECTED(path)


@pytest.mark.parametrize("path", ["test/a.py", "src/tests.py", "mytests/a.py", "pytest.ini.bak", "tools.py"])
def test_ordinary_paths_are_not_protected(path):
    assert not PROTECTED(path)


def test_resolve_follows_symlinks_inside_the_copy_only(tmp_path):
    (tmp_path / "tests").mkdir()
    os.symlink("tests", tmp_path / "t")
    os.symlink("tests/test_a.py", tmp_path / "link.py")
    os.symlink("/etc", tmp_path / "out")
    os.symlink("..", tmp_path / "up")
    os.symlink("loop", tmp_path / "loop")
    assert resolve(tmp_path, "t/test_a.py") == "tests/test_a.py"
    assert resolve(tmp_path, "link.py") == "tests/test_a.py"
    assert resolve(tmp_path, "src/new.py") == "src/new.py"
    for escaping in ("out/passwd", "up/x", "loop"):
        assert resolve(tmp_path, escaping) is None
