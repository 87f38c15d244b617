"""Drift schedule of `record_upgrade`: the outside commits the drift arms apply.

d-schema  changed_value  the schema (read at s01) gains a field: the docs step must list it,
                         and the last step's whole-file rewrite of the schema from memory drops
                         it (the format's fields are read by the writer in another module)
d-caller  new_caller     a new format-1 writer in a package already migrated
d-legacy  new_trap       a colleague's `legacy_*` helper in a package not yet migrated, which
                         a later package imports; only the commit message says to keep it
"""

from __future__ import annotations

import random

from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.record_upgrade import repo
from tasks.spec import Drift

CURRENCY = (*repo.FIELDS, "currency")


def schedule(
    rng: random.Random,
    n: repo.Names,
    files: dict[str, str],
    pkgs: list[str],
    modules: list[list[str]],
    avoid: set[str],
    steps: int,
) -> tuple[tuple[Drift, ...], common.Legacy | None]:
    author = rng.choice(build.AUTHORS)
    new_mod = skeleton.new_module(rng, files, pkgs[0])
    new_src, new_test = repo.new_caller(n, pkgs[0], new_mod, rng.randint(100, 900))
    drift = [
        Drift(
            "d-schema",
            "changed_value",
            build.sid(rng.randint(2, steps)),
            f"{n.schema}: format 2 records carry their currency",
            author,
            (
                (n.schema_path, repo.schema_module(CURRENCY)),
                ("tests/test_schema_fields.py", repo.fields_test(n, CURRENCY)),
            ),
            f"{n.schema_path} (read at s01, documented at s{steps - 1:02d}, rewritten at s{steps:02d}) gets a "
            "currency field, which the format-2 writer in another module reads",
        ),
        skeleton.caller_drift(
            build.sid(rng.randint(3, steps - 1)),
            pkgs[0],
            new_mod,
            new_src,
            new_test,
            f"{pkgs[0]}: store the weekly audit lines",
            author,
            f"a new format-1 {n.old} writer in {pkgs[0]}/{new_mod}.py, a package already migrated",
        ),
    ]
    return skeleton.drift_schedule(rng, drift, files, pkgs, modules, avoid, 2, author)
