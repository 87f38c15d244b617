"""Drift schedule of `batch_writes`: the outside commits the drift arms apply.

d-limit   changed_value  the backend (read at s01) takes fewer records per call and counts its
                         calls: the docs step must carry the new limit, and the last step's
                         whole-file rewrite of the backend from memory drops both
d-caller  new_caller     a new per-row write loop in a package already migrated
d-legacy  new_trap       a colleague's `legacy_*` helper in a package not yet migrated, which
                         a later package imports; only the commit message says to keep it
"""

from __future__ import annotations

import random

from tasks.batch_writes import repo
from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.spec import Drift


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
            "d-limit",
            "changed_value",
            build.sid(rng.randint(2, steps)),
            f"{n.backend}: the new cluster takes {repo.changed_limit(n)} records per call; count calls",
            author,
            (
                (n.backend_path, repo.backend_module(n, repo.changed_limit(n), stats=True)),
                ("tests/test_backend_calls.py", repo.calls_test(n)),
            ),
            f"{n.backend_path} (read at s01, documented at s{steps - 1:02d}, rewritten at s{steps:02d}) gets a "
            "lower LIMIT and a calls() counter",
        ),
        skeleton.caller_drift(
            build.sid(rng.randint(3, steps - 1)),
            pkgs[0],
            new_mod,
            new_src,
            new_test,
            f"{pkgs[0]}: store the weekly audit rows",
            author,
            f"a new per-row {n.save} loop in {pkgs[0]}/{new_mod}.py, a package already migrated",
        ),
    ]
    return skeleton.drift_schedule(rng, drift, files, pkgs, modules, avoid, 2, author)
