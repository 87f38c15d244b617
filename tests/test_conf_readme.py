"""conf/README.md lists every config group and every option in it: a newcomer reads the
table to learn what `group=name` accepts, so an option missing there is an option hidden."""

from __future__ import annotations

import re

from bench.config import ROOT

CONF = ROOT / "conf"
# Folders that are not groups a user chooses from: Hydra's own settings, and the base configs
# real models extend (`model/base/`).
NOT_CHOICES = {"hydra", "model/base"}


def _groups() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in sorted(CONF.rglob("*.yaml")):
        group = str(path.parent.relative_to(CONF))
        if group != "." and not any(group == n or group.startswith(f"{n}/") for n in NOT_CHOICES):
            out.setdefault(group, set()).add(path.stem)
    return out


def _readme_rows(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w/]+)/` \| (.*) \|$", text, re.M)}


def missing_from(text: str) -> list[str]:
    rows = _readme_rows(text)
    missing = []
    for group, options in _groups().items():
        if group not in rows:
            missing.append(f"{group}/ (no row)")
            continue
        named = set(re.findall(r"`([\w-]+)`", rows[group]))
        missing += [f"{group}/{o}" for o in sorted(options - named)]
    return missing


def test_the_readme_lists_every_group_and_option():
    assert missing_from((CONF / "README.md").read_text()) == []


def test_the_check_sees_a_missing_option():
    text = (CONF / "README.md").read_text().replace("`oracle`", "")
    assert "model/oracle" in missing_from(text)
    assert "arm/ (no row)" in missing_from(re.sub(r"^\| `arm/`.*$", "", text, flags=re.M))
