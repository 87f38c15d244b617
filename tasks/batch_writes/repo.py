"""Repository text for `batch_writes`: seeded names, the store and its in-memory backend, the
callers' per-row write loops, the export whose column order another package reads by
position, docs, shipped tests and the drift commits' files.

The text is in tasks/batch_writes/templates/; here every seeded value is drawn, in a
fixed order, and handed to a template.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tasks.common import build
from tasks.common.build import RESOURCES, fillers
from tasks.common.render import render, snippet

VERSION = 3
FUNCTIONS, CALLERS, TESTS = (
    "batch_writes/functions.py.j2",
    "batch_writes/callers.py.j2",
    "batch_writes/tests.py.j2",
)
_FIRST, _SECOND, _LAST = (
    ("_check_id", "_require_id", "_validate_id"),
    ("_stamp", "_with_version", "_add_version"),
    ("_freeze", "_as_record", "_to_record"),
)


@dataclass(frozen=True)
class Names:
    core: str  # the package that owns storage
    store: str  # <core>/<store>.py: the write API
    backend: str  # <core>/<backend>.py: the in-memory backend with its per-call limit
    save: str  # the per-row write
    bulk: str  # the bulk write the plan adds
    hooks: str  # the tuple of hooks every row passes through, in order
    chain: tuple[str, str, str]  # the hooks, in their (unsorted) order
    limit: int  # records per backend call
    doc: str  # docs/<doc>.md

    @property
    def doc_path(self) -> str:
        return f"docs/{self.doc}.md"

    @property
    def store_path(self) -> str:
        return f"{self.core}/{self.store}.py"

    @property
    def backend_path(self) -> str:
        return f"{self.core}/{self.backend}.py"


def names(rng: random.Random) -> Names:
    save, bulk = rng.choice(
        (
            ("save", "save_all"),
            ("put_row", "put_rows"),
            ("write_row", "write_rows"),
            ("store_row", "store_rows"),
            ("insert", "insert_many"),
            ("record_row", "record_rows"),
        )
    )
    chain = (rng.choice(_FIRST), rng.choice(_SECOND), rng.choice(_LAST))
    while list(chain) == sorted(chain):  # sorting must change the order: the tidy-up must do something
        chain = (rng.choice(_FIRST), rng.choice(_SECOND), rng.choice(_LAST))
    return Names(
        core=rng.choice(("storage", "persist", "datastore", "sinks")),
        store=rng.choice(("store", "writer")),
        backend=rng.choice(("backend", "engine", "db")),
        save=save,
        bulk=bulk,
        hooks=rng.choice(("HOOKS", "PIPELINE", "STAGES", "BEFORE_WRITE")),
        chain=chain,
        limit=rng.choice((20, 25, 40, 50)),
        doc=rng.choice(("storage", "writes", "persistence")),
    )


def record(row: dict) -> tuple:
    """What the backend stores for a row (the hooks, in order)."""
    return (row["id"], VERSION, row.get("kind", ""), row.get("qty", 0))


def store_module(n: Names, rng: random.Random, filler: int) -> str:
    helpers = fillers(rng, filler, {n.save, *n.chain})
    return render("batch_writes/store.py.j2", n=n, version=VERSION, fillers=[src for _, src in helpers])


def written(name: str, n: Names, *args: object) -> str:
    """The code a step's edit writes (the oracle's): macro `name` of functions.py.j2."""
    return snippet(FUNCTIONS, name, n, *args)


def backend_module(n: Names, limit: int | None = None, stats: bool = False, put: bool = True) -> str:
    """`limit`, `stats`: the d-limit drift; `put=False`: after the last step removes the per-row call."""
    return render(
        "batch_writes/backend.py.j2", limit=n.limit if limit is None else limit, stats=stats, put=put
    )


def changed_limit(n: Names) -> int:
    return {20: 15, 25: 20, 40: 30, 50: 40}[n.limit]


_VERBS = ("sync", "store", "import", "ingest", "copy", "load")


def caller_module(
    rng: random.Random, n: Names, pkg: str, mod: str, sites: int, filler: int, sibling: tuple[str, str] | None
) -> tuple[str, list[str], list[str]]:
    """A module whose functions write rows one at a time, its tests, and its filler helpers' names."""

    def site(res: str, func: str, call: str) -> tuple[str, str]:
        form, q, first = rng.randrange(3), rng.randint(1, 9), rng.randint(1, 90)
        if form == 0:
            rows = [{"id": first + i, "kind": res, "qty": q + i} for i in range(3)]
            args = repr(rows)
        elif form == 1:
            items = [{"id": first}, {"id": first + 1, "qty": 2}]
            args = repr(items)
            rows = [{"id": it["id"], "kind": res, "qty": it.get("qty", q)} for it in items]
        else:
            args = repr([first, first + 2])
            rows = [{"id": i, "kind": res, "qty": q} for i in (first, first + 2)]
        return (
            snippet(CALLERS, "site", form, func, call, res, q),
            snippet(CALLERS, "site_test", n, pkg, mod, func, args, sorted(record(r) for r in rows)),
        )

    return build.caller_module(
        rng,
        (n.core, n.store, n.save),
        pkg,
        mod,
        f"rows the {mod} job stores.",
        sites,
        filler,
        sibling,
        _VERBS,
        site,
    )


def export_pair(rng: random.Random, host: str, importer: str) -> tuple[str, tuple[str, ...], str, str, str]:
    """(columns constant, its order, exporter source for `host`, loader source for `importer`,
    a test for the importer's package): the export's column order is read by position elsewhere."""
    res = rng.choice(RESOURCES)
    cols = ("id", "kind", "qty", "site")
    order = tuple(rng.sample(cols, 4))
    while list(order) == sorted(order):
        order = tuple(rng.sample(cols, 4))
    const = f"{res.upper()}_COLUMNS"
    mod, host_mod = importer.rsplit("/", 1)[1][:-3], host[:-3].replace("/", ".")
    row = {c: str(i + 2) for i, c in enumerate(cols)}
    return (
        const,
        order,
        snippet(FUNCTIONS, "exporter", const, order, res),
        snippet(FUNCTIONS, "loader", res, host, order),
        snippet(TESTS, "export_test", mod, res, host, host_mod, importer, row),
    )


def docs(n: Names) -> str:
    return snippet(FUNCTIONS, "docs", n)


BULK = "## Bulk writes"


def bulk_section(n: Names, limit: int, chain: tuple[str, ...]) -> str:
    return snippet(FUNCTIONS, "bulk_section", n, BULK, limit, chain)


def load_test(n: Names) -> str:
    return snippet(TESTS, "load_test", n)


def store_test(n: Names) -> str:
    return snippet(TESTS, "store_test", n, VERSION)


def calls_test(n: Names) -> str:
    return snippet(TESTS, "calls_test", n, changed_limit(n))


def new_caller(n: Names, pkg: str, mod: str, first: int) -> tuple[str, str]:
    """A colleague's new module, still writing row by row, and its test."""
    rows = [{"id": first, "kind": "audit", "qty": 1}]
    return (
        snippet(FUNCTIONS, "new_caller", n, pkg, mod),
        snippet(TESTS, "new_caller_test", n, pkg, mod, rows, [record(r) for r in rows]),
    )
