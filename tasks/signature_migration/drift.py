"""Drift schedule of `signature_migration`: the outside commits the drift arms apply.

d-routes  changed_value  the route table (read at s02) gets a changed retry count and a new
                         job: the docs step must carry the new values, and the last step's
                         whole-file rewrite of the table from memory drops them
d-caller  new_caller     a new legacy call in a package already migrated
d-legacy  new_trap       a colleague's `legacy_*` helper in a package not yet migrated, which
                         a later package imports; only the commit message says to keep it
"""

from __future__ import annotations

import random

from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.signature_migration import repo
from tasks.spec import Drift


def schedule(
    rng: random.Random,
    n: repo.Names,
    files: dict[str, str],
    pkgs: list[str],
    modules: list[list[str]],
    routes: list[tuple[str, int, int]],
    avoid: set[str],
    jobs: tuple[str, ...],
    steps: int,
) -> tuple[tuple[Drift, ...], common.Legacy | None]:
    """The drift commits, sorted by the step they land before, and the planted new trap (if
    the packages leave room for one)."""
    author = rng.choice(build.AUTHORS)
    batches = len(pkgs)
    router = f"{n.core}/{n.router}.py"
    changed = [(j, t, r + 1 if k == 0 else r) for k, (j, t, r) in enumerate(routes)]
    changed.append(
        (
            rng.choice([j for j in jobs if j not in {x[0] for x in routes}]),
            rng.choice(repo.TIMEOUTS),
            rng.choice(repo.RETRIES),
        )
    )
    new_mod = skeleton.new_module(rng, files, pkgs[0])
    new_src, new_test = repo.new_caller(
        n, pkgs[0], new_mod, rng.choice(repo.TIMEOUTS), rng.choice(repo.RETRIES)
    )
    drift = [
        Drift(
            "d-routes",
            "changed_value",
            build.sid(3 + rng.randrange(batches)),
            f"jobs: retry {routes[0][0]} harder, add the {changed[-1][0]} job",
            author,
            (
                (router, repo.router_module(n, changed)),
                ("tests/test_routes.py", repo.routes_test(n, changed)),
            ),
            f"{router} (read at s02, documented at s{steps - 1:02d}, rewritten at s{steps:02d}) gains a job "
            "and a changed entry",
        ),
        skeleton.caller_drift(
            build.sid(rng.randint(4, steps - 1)),
            pkgs[0],
            new_mod,
            new_src,
            new_test,
            f"{pkgs[0]}: add the {new_mod} health probe",
            author,
            f"a new legacy call in {pkgs[0]}/{new_mod}.py, a package already migrated",
        ),
    ]
    return skeleton.drift_schedule(rng, drift, files, pkgs, modules, avoid, 3, author)
