"""Drift schedule of `extract_module`: the outside commits the drift arms apply.

d-rename   rename_helper  the text helper is renamed in the helpers module and the utility
                          module (read at s01); the new package, written at s01 from the old
                          text, still calls the old name, which the lint flags
d-plugins  changed_value  a formatter entry is added to the registry (read at s02): the last
                          step's whole-file rewrite of the registry from memory drops it
d-caller   new_caller     a new import of a moved name in a package already migrated
d-legacy   new_trap       a colleague's `legacy_*` helper in a package not yet migrated, which
                          a later package imports; only the commit message says to keep it
"""

from __future__ import annotations

import random

from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.extract_module import repo
from tasks.spec import Drift


def schedule(
    rng: random.Random,
    n: repo.Names,
    files: dict[str, str],
    util_renamed: str,
    entries: list[tuple[str, str]],
    pkgs: list[str],
    modules: list[list[str]],
    avoid: set[str],
    steps: int,
) -> tuple[tuple[Drift, ...], common.Legacy | None]:
    author = rng.choice(build.AUTHORS)
    util, helpers, plugins = n.path(n.util), n.path(n.helpers), n.path(n.plugins)
    gmod = f"{n.app}/{n.grp}/{n.gmod}.py"
    new_mod = skeleton.new_module(rng, files, pkgs[0])
    new_src, new_test = repo.new_caller(n, pkgs[0], new_mod, rng.choice(n.group))
    extra = rng.choice([g for g in n.group if g not in {fn for _, fn in entries}])
    more = [*entries, (f"{extra}_v2", extra)]
    drift = [
        Drift(
            "d-rename",
            "rename_helper",
            "s02",
            f"{n.helpers}: rename {n.h} to {n.h2}",
            author,
            ((helpers, repo.helpers_module(n, renamed=True)), (util, util_renamed)),
            f"{n.h} becomes {n.h2} in {helpers} and {util} (read at s01); {gmod}, written at s01 from the "
            "old text, still uses the old name, which the lint flags",
        ),
        Drift(
            "d-plugins",
            "changed_value",
            build.sid(rng.randint(3, steps - 1)),
            f"reports: register the {extra}_v2 formatter",
            author,
            (
                (plugins, repo.plugins_module(n, more)),
                ("tests/test_plugins.py", repo.plugins_test(n, more, rng)),
                ("docs/plugins.md", repo.docs(n, more)["docs/plugins.md"]),
            ),
            f"{plugins} (read at s02, rewritten at s{steps:02d}) gains an entry naming {n.app}.{n.util}",
        ),
        skeleton.caller_drift(
            build.sid(rng.randint(4, steps - 1)),
            pkgs[0],
            new_mod,
            new_src,
            new_test,
            f"{pkgs[0]}: weekly digest subjects",
            author,
            f"a new import of a moved name from {n.app}.{n.util} in {pkgs[0]}, a package already migrated",
        ),
    ]
    return skeleton.drift_schedule(rng, drift, files, pkgs, modules, avoid, 3, author)
