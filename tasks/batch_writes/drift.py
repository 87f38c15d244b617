"""Drift schedule of `batch_writes`: the outside commits the drift arms apply.

d-limit   changed_value  the backend (read at s01) takes fewer records per call and counts its
                         calls: the docs step must carry the new limit, and the last step's
                         whole-file rewrite of the backend from memory drops both
d-caller  new_caller     a new per-row write loop in a package already migrated
d-legacy  new_trap       the one every family has (tasks/common/skeleton.py, `legacy_drift`)
"""

from __future__ import annotations

from tasks.batch_writes import repo
from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.spec import Drift


def schedule(at: skeleton.Layout, n: repo.Names) -> tuple[tuple[Drift, ...], common.Legacy | None]:
    rng, steps, pkg = at.rng, at.steps, at.pkgs[0]
    author = rng.choice(build.AUTHORS)
    new_mod = skeleton.new_module(at)
    new_src, new_test = repo.new_caller(n, pkg, new_mod, rng.randint(100, 900))
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
            at,
            3,
            new_mod,
            new_src,
            new_test,
            f"{pkg}: store the weekly audit rows",
            author,
            f"a new per-row {n.save} loop in {pkg}/{new_mod}.py, a package already migrated",
        ),
    ]
    return skeleton.drift_schedule(at, drift, 2, author)
