"""Every template ships with the package: an editable install reads them from the tree, a wheel
only has what pyproject.toml's [tool.setuptools.package-data] names."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ctxlog", "bench", "tasks", "strategies", "analysis")


def test_every_template_is_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    found = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("templates/*") if p.is_file()]
    assert found, "no templates found: the test looks in the wrong place"
    missing = []
    for path in found:
        package_dir = path.parent.parent
        package = ".".join(package_dir.relative_to(ROOT).parts)
        # setuptools reads a pattern relative to the package that names it, so a parent package's
        # pattern (`"tasks" = ["*/templates/*.j2"]`) ships its sub-packages' templates too.
        owners = [package_dir, *[d for d in package_dir.parents if d != ROOT and ROOT in d.parents]]
        if not any(
            fnmatch.fnmatch(path.relative_to(d).as_posix(), pattern)
            for d in owners
            for pattern in data.get(".".join(d.relative_to(ROOT).parts), [])
        ):
            missing.append(f"{path.relative_to(ROOT)} (package {package})")
    assert missing == [], f"not shipped by [tool.setuptools.package-data]: {missing}"
