"""Drift schedule of `config_rename`: the outside commits the drift arms apply.

d-template  changed_value  the config template (read at s01) gets a new default for the key and
                           a work queue: the docs step must carry the new default, and the last
                           step's whole-file rewrite of the module from memory drops both
d-lint      tool_change    the key lint's `final` starts covering ops/, where a script still
                           reads the old key
d-legacy    new_trap       a colleague's `legacy_*` helper in a package not yet migrated, which
                           a later package imports; only the commit message says to keep it
"""

from __future__ import annotations

import random

from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.config_rename import repo
from tasks.spec import Drift


def schedule(
    rng: random.Random,
    n: repo.Names,
    files: dict[str, str],
    fixtures_test: str,
    scan: list[str],
    pkgs: list[str],
    modules: list[list[str]],
    avoid: set[str],
    steps: int,
) -> tuple[tuple[Drift, ...], common.Legacy | None]:
    """`fixtures_test`: tests/test_fixtures.py as it must read under the drifted default."""
    author = rng.choice(build.AUTHORS)
    config = f"{n.app}/config.py"
    drift = [
        Drift(
            "d-template",
            "changed_value",
            build.sid(rng.randint(2, steps)),
            "config: new deployments get a work queue and a bigger default",
            author,
            (
                (config, repo.config_module(n, queue=True, default=changed_default(n))),
                ("tests/test_queue.py", repo.queue_test(n)),
                ("tests/test_fixtures.py", fixtures_test),
            ),
            f"{config} (read at s01, documented at s{steps - 1:02d}, rewritten at s{steps:02d}) changes the "
            f"template's default for {n.old!r} and adds a queue",
        ),
        Drift(
            "d-lint",
            "tool_change",
            build.sid(rng.randint(3, steps)),
            "tools: the key lint covers ops/ too",
            author,
            (("tools/check_keys.py", repo.tool(n, [*scan, "ops"])),),
            f"`check_keys.py final` now also scans ops/, where ops/{n.script}.py still reads {n.old!r}",
        ),
    ]
    return skeleton.drift_schedule(rng, drift, files, pkgs, modules, avoid, 2, author)


def changed_default(n: repo.Names) -> int:
    """The template default after d-template: the next larger size on the list (or the first)."""
    sizes = (4, 8, 16, 30, 60)
    return sizes[(sizes.index(n.default) + 1) % len(sizes)]
