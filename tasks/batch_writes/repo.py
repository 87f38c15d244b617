"""Repository text for `batch_writes`: seeded names, the store and its in-memory backend, the
callers' per-row write loops, the export whose column order another package reads by
position, docs, shipped tests and the drift commits' files. Pure templating."""

from __future__ import annotations

import random
from dataclasses import dataclass

from tasks.common.build import RESOURCES, fillers

VERSION = 3
_FIRST, _SECOND, _LAST = (("_check_id", "_require_id", "_validate_id"), ("_stamp", "_with_version", "_add_version"),
                          ("_freeze", "_as_record", "_to_record"))


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
    def store_path(self) -> str:
        return f"{self.core}/{self.store}.py"

    @property
    def backend_path(self) -> str:
        return f"{self.core}/{self.backend}.py"


def names(rng: random.Random) -> Names:
    save, bulk = rng.choice((("save", "save_all"), ("put_row", "put_rows"), ("write_row", "write_rows"),
                             ("store_row", "store_rows"), ("insert", "insert_many"), ("record_row", "record_rows")))
    chain = (rng.choice(_FIRST), rng.choice(_SECOND), rng.choice(_LAST))
    while list(chain) == sorted(chain):  # sorting must change the order: the tidy-up must do something
        chain = (rng.choice(_FIRST), rng.choice(_SECOND), rng.choice(_LAST))
    return Names(core=rng.choice(("storage", "persist", "datastore", "sinks")), store=rng.choice(("store", "writer")),
                 backend=rng.choice(("backend", "engine", "db")), save=save, bulk=bulk,
                 hooks=rng.choice(("HOOKS", "PIPELINE", "STAGES", "BEFORE_WRITE")), chain=chain,
                 limit=rng.choice((20, 25, 40, 50)), doc=rng.choice(("storage", "writes", "persistence")))


def record(row: dict) -> tuple:
    """What the backend stores for a row (the hooks, in order)."""
    return (row["id"], VERSION, row.get("kind", ""), row.get("qty", 0))


def store_module(n: Names, rng: random.Random, filler: int) -> str:
    a, b, z = n.chain
    extra = "".join("\n\n" + src for _, src in fillers(rng, filler, {n.save, *n.chain}))
    return (f'"""Writing rows to the backend.\n\n`{n.save}` stores one row per backend call. Every row passes through '
            f'{n.hooks} first,\none hook after the other.\n"""\n\nfrom {n.core} import {n.backend}\n\n'
            f"VERSION = {VERSION}\n\n\n"
            f'def {a}(row):\n    """A row must carry an integer id."""\n    if not isinstance(row.get("id"), int):\n'
            '        raise ValueError(f"row without an integer id: {row!r}")\n    return row\n\n\n'
            f'def {b}(row):\n    """Mark the row with the schema version."""\n    return {{**row, "v": VERSION}}\n\n\n'
            f'def {z}(row):\n    """The backend\'s record: (id, version, kind, qty)."""\n'
            '    return (row["id"], row["v"], row.get("kind", ""), row.get("qty", 0))\n\n\n'
            f"{n.hooks} = ({a}, {b}, {z})\n\n\n"
            f'def _prepare(row):\n    for hook in {n.hooks}:\n        row = hook(row)\n    return row\n\n\n'
            f'def {n.save}(row):\n    """Store one row (one backend call)."""\n    {n.backend}.put(_prepare(row))\n\n\n'
            'def _dump_rows(rows):\n    """Rows as text, from before the backend had a shell."""\n'
            '    return "\\n".join(repr(row) for row in rows)\n' + extra)


def bulk_function(n: Names) -> str:
    return (f"def {n.bulk}(rows):\n"
            f'    """Store `rows` in as few backend calls as it takes: chunks of at most {n.backend}.LIMIT."""\n'
            "    records = [_prepare(row) for row in rows]\n"
            f"    for start in range(0, len(records), {n.backend}.LIMIT):\n"
            f"        {n.backend}.put_many(records[start:start + {n.backend}.LIMIT])\n")


def one_call(n: Names) -> str:
    """The tempting simplification of the bulk write: one call, whatever the size."""
    return (f"def {n.bulk}(rows):\n"
            f'    """Store `rows` in one backend call."""\n'
            f"    {n.backend}.put_many([_prepare(row) for row in rows])\n")


def ids_function(n: Names) -> str:
    return (f'def saved_ids():\n    """The ids the backend holds, sorted."""\n    return sorted({n.backend}.ROWS)\n')


def backend_module(n: Names, limit: int | None = None, stats: bool = False, put: bool = True) -> str:
    """`limit`, `stats`: the d-limit drift; `put=False`: after the last step removes the per-row call."""
    one = ('def put(record):\n    """Write one record (one call)."""\n    CALLS.append(1)\n'
           "    ROWS[record[0]] = record\n\n\n") if put else ""
    more = ('\n\ndef calls():\n    """How many backend calls so far, and the largest."""\n'
            "    return len(CALLS), max(CALLS, default=0)\n") if stats else ""
    return (f'"""The storage backend, in memory (tests read it back).\n\nOne call writes one record, or a list of '
            f'at most LIMIT records.\n"""\n\nLIMIT = {n.limit if limit is None else limit}\nROWS = {{}}\nCALLS = []\n\n\n'
            'def reset():\n    ROWS.clear()\n    CALLS.clear()\n\n\n' + one
            + 'def put_many(records):\n    """Write many records in one call."""\n    if len(records) > LIMIT:\n'
            '        raise ValueError(f"{len(records)} records in one call; the backend takes at most {LIMIT}")\n'
            "    CALLS.append(len(records))\n    for record in records:\n        ROWS[record[0]] = record\n" + more)


def changed_limit(n: Names) -> int:
    return {20: 15, 25: 20, 40: 30, 50: 40}[n.limit]


_VERBS = ("sync", "store", "import", "ingest", "copy", "load")


def caller_module(rng: random.Random, n: Names, pkg: str, mod: str, sites: int, filler: int,
                  sibling: tuple[str, str] | None) -> tuple[str, list[str], list[str]]:
    """A module whose functions write rows one at a time, its tests, and its filler helpers' names."""
    attr = rng.random() < 0.3  # `from core import store` + `store.save(...)`
    call = f"{n.store}.{n.save}" if attr else n.save
    head = [f'"""{pkg.capitalize()} {mod}: rows the {mod} job stores."""', ""]
    head.append(f"from {n.core} import {n.store}" if attr else f"from {n.core}.{n.store} import {n.save}")
    if sibling:
        head.append(f"from {pkg}.{sibling[0]} import {sibling[1]}")
    bodies, tests, taken = [], [], set()
    for res in rng.sample(RESOURCES, sites):
        func = f"{rng.choice(_VERBS)}_{res}"
        while func in taken:
            func = f"{rng.choice(_VERBS)}_{res}"
        taken.add(func)
        form, q, first = rng.randrange(3), rng.randint(1, 9), rng.randint(1, 90)
        if form == 0:
            body = (f'    """Store every {res} row as it comes."""\n    for row in rows:\n        {call}(row)\n'
                    "    return len(rows)\n")
            params, rows = "rows", [{"id": first + i, "kind": res, "qty": q + i} for i in range(3)]
            args = repr(rows)
        elif form == 1:
            body = (f'    """One {res} row per item, quantities defaulted to {q}."""\n    for item in items:\n'
                    f'        {call}({{"id": item["id"], "kind": "{res}", "qty": item.get("qty", {q})}})\n')
            items = [{"id": first}, {"id": first + 1, "qty": 2}]
            params, args = "items", repr(items)
            rows = [{"id": it["id"], "kind": res, "qty": it.get("qty", q)} for it in items]
        else:
            body = (f'    """A {res} row for each id, all with the same quantity."""\n    for ident in ids:\n'
                    f'        {call}({{"id": ident, "kind": "{res}", "qty": qty}})\n    return list(ids)\n')
            params, args = f"ids, qty={q}", repr([first, first + 2])
            rows = [{"id": i, "kind": res, "qty": q} for i in (first, first + 2)]
        bodies.append(f"def {func}({params}):\n{body}")
        want = sorted(record(r) for r in rows)
        tests.append(f"def test_{mod}_{func}():\n    from {n.core} import {n.backend}\n\n    {n.backend}.reset()\n"
                     f"    {mod}.{func}({args})\n    got = sorted({n.backend}.ROWS.values())\n"
                     f'    assert got == {want!r}, "{pkg}/{mod}.py: {func} stored different rows: " + repr(got)\n')
    helpers = fillers(rng, filler, taken)
    for _name, src in helpers:
        bodies.insert(rng.randint(0, len(bodies)), src)
    if sibling:
        bodies.append(f'def count_{mod}_rows(rows):\n    """How many rows the {sibling[0]} helper keeps."""\n'
                      f"    return len({sibling[1]}(rows))\n")
    return ("\n".join(head) + "\n\n\n" + "\n\n\n".join(b.rstrip("\n") for b in bodies) + "\n", tests,
            [name for name, _ in helpers])


def export_pair(rng: random.Random, host: str, importer: str) -> tuple[str, tuple[str, ...], str, str, str]:
    """(columns constant, its order, exporter source for `host`, loader source for `importer`,
    a test for the importer's package): the export's column order is read by position elsewhere."""
    res = rng.choice(RESOURCES)
    cols = ("id", "kind", "qty", "site")
    order = tuple(rng.sample(cols, 4))
    while list(order) == sorted(order):
        order = tuple(rng.sample(cols, 4))
    const = f"{res.upper()}_COLUMNS"
    exporter = (f"{const} = {order!r}\n\n\n"
                f'def export_{res}(rows):\n    """The {res} export: one comma-separated line per row."""\n'
                f'    return [",".join(str(row.get(col, "")) for col in {const}) for row in rows]\n')
    loader = (f'def load_{res}_export(lines):\n    """Rows back from the {host} export (its columns, by position)."""\n'
              f'    return [dict(zip({order!r}, line.split(","))) for line in lines]\n')
    mod, host_mod = importer.rsplit("/", 1)[1][:-3], host[:-3].replace("/", ".")
    row = {c: str(i + 2) for i, c in enumerate(cols)}
    test = (f"def test_{mod}_load_{res}_export():\n    import {host_mod}\n\n    rows = [{row!r}]\n"
            f"    got = {mod}.load_{res}_export({host_mod}.export_{res}(rows))\n"
            f'    assert got == rows, "{importer}: the {host} export reads back differently: " + repr(got)\n')
    return const, order, exporter, loader, test


def docs(n: Names) -> str:
    return (f"# {n.core}.{n.store}\n\n`{n.save}(row)` stores one row: one backend call per row.\n"
            f"Every row passes through `{n.hooks}` on the way.\n")


BULK = "## Bulk writes"


def bulk_section(n: Names, limit: int, chain: tuple[str, ...]) -> str:
    return (f"{BULK}\n\n`{n.bulk}(rows)` stores many rows in chunks of at most {limit} rows per backend call.\n\n"
            "Hooks, in order: " + " -> ".join(f"`{h}`" for h in chain) + "\n")


def load_test(n: Names) -> str:
    return (f'"""A nightly batch is bigger than one backend call takes (shipped; read-only)."""\n\n'
            f"from {n.core} import {n.backend}, {n.store}\n\n\n"
            "def test_a_nightly_batch_is_stored_in_full():\n"
            f"    {n.backend}.reset()\n"
            f'    rows = [{{"id": i, "kind": "load", "qty": i % 7}} for i in range(3 * {n.backend}.LIMIT + 1)]\n'
            f'    bulk = getattr({n.store}, "{n.bulk}", None)\n'
            f"    if bulk is None:\n        for row in rows:\n            {n.store}.{n.save}(row)\n"
            "    else:\n        bulk(rows)\n"
            f'    assert len({n.backend}.ROWS) == len(rows), "{n.store_path}: a batch of " + str(len(rows)) + '
            '" rows was not stored in full"\n')


def store_test(n: Names) -> str:
    return (f'"""The record every row becomes (shipped; read-only)."""\n\nfrom {n.core} import {n.store}\n\n\n'
            "def test_prepare_builds_the_record():\n"
            f'    got = {n.store}._prepare({{"id": 4, "kind": "x", "qty": 2}})\n'
            f'    assert got == (4, {VERSION}, "x", 2), "{n.store_path}: the hooks built " + repr(got)\n')


def calls_test(n: Names) -> str:
    return (f'"""Backend call statistics (added with them)."""\n\nfrom {n.core} import {n.backend}\n\n\n'
            f"def test_calls_are_counted():\n    {n.backend}.reset()\n    {n.backend}.put_many([(1, 3, 'x', 0)])\n"
            f'    assert {n.backend}.calls() == (1, 1), "{n.backend_path}: calls() changed"\n'
            f'    assert {n.backend}.LIMIT == {changed_limit(n)}, "{n.backend_path}: LIMIT must be {changed_limit(n)}"\n')


def new_caller(n: Names, pkg: str, mod: str, first: int) -> tuple[str, str]:
    """A colleague's new module, still writing row by row, and its test."""
    src = (f'"""{pkg.capitalize()} {mod}: the weekly audit rows."""\n\nfrom {n.core}.{n.store} import {n.save}\n\n\n'
           f'def store_audit(rows):\n    """Store the audit rows."""\n    for row in rows:\n        {n.save}(row)\n')
    rows = [{"id": first, "kind": "audit", "qty": 1}]
    test = (f'"""The {pkg}.{mod} audit rows (added with it)."""\n\nfrom {n.core} import {n.backend}\n'
            f"from {pkg} import {mod}\n\n\ndef test_{mod}_store_audit():\n    {n.backend}.reset()\n"
            f"    {mod}.store_audit({rows!r})\n    got = sorted({n.backend}.ROWS.values())\n"
            f'    assert got == {[record(r) for r in rows]!r}, "{pkg}/{mod}.py: store_audit stored " + repr(got)\n')
    return src, test
