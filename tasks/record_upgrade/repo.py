"""Repository text for `record_upgrade`: seeded names, the codec and its schema, the callers'
format-1 writers, the retry path that upgrades records twice, the export another package reads
in euros, the format-1 archive on disk, docs, shipped tests and the drift commits' files.
Pure templating.

The text is in tasks/record_upgrade/templates/; here every seeded value is drawn, in a
fixed order, and handed to a template.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tasks.common import build
from tasks.common.build import RESOURCES, fillers
from tasks.common.render import render, snippet

FORMAT = 2
FIELDS = ("id", "kind", "amount")
CURRENT = "## Format 2"
FUNCTIONS, CALLERS, TESTS = (
    "record_upgrade/functions.py.j2",
    "record_upgrade/callers.py.j2",
    "record_upgrade/tests.py.j2",
)


@dataclass(frozen=True)
class Names:
    core: str  # the package that owns the record format
    codec: str  # <core>/<codec>.py: writers, the reader, upgrade
    schema: str  # <core>/<schema>.py: the format's version and fields
    old: str  # the format-1 writer
    new: str  # the format-2 writer the plan adds
    decode: str  # the reader of both formats
    upgrade: str  # format-1 record -> format 2, a no-op on format 2
    parse_v1: str  # the private format-1 line parser
    archive: str  # fixtures/<archive>.txt: format-1 lines on disk
    doc: str  # docs/<doc>.md

    @property
    def doc_path(self) -> str:
        return f"docs/{self.doc}.md"

    @property
    def codec_path(self) -> str:
        return f"{self.core}/{self.codec}.py"

    @property
    def schema_path(self) -> str:
        return f"{self.core}/{self.schema}.py"

    @property
    def archive_path(self) -> str:
        return f"fixtures/{self.archive}.txt"


def names(rng: random.Random) -> Names:
    old, new, decode = rng.choice(
        (
            ("encode_v1", "encode", "decode"),
            ("dump_v1", "dump", "load"),
            ("to_line_v1", "to_line", "from_line"),
            ("pack_v1", "pack", "unpack"),
            ("format_v1", "format_line", "parse_line"),
        )
    )
    return Names(
        core=rng.choice(("records", "ledger", "entries", "journal")),
        codec=rng.choice(("codec", "lines", "serial")),
        schema=rng.choice(("schema", "layout", "spec")),
        old=old,
        new=new,
        decode=decode,
        upgrade=rng.choice(("upgrade", "upgrade_record", "to_current", "migrate_record")),
        parse_v1=rng.choice(("_parse_v1", "_read_v1", "_from_v1")),
        archive=rng.choice(("archive", "history", "backup")),
        doc=rng.choice(("records", "format", "storage")),
    )


def cents(euros: float) -> int:
    return round(euros * 100)


def schema_module(fields: tuple[str, ...] = FIELDS, v1: bool = True) -> str:
    """`fields`: the d-schema drift adds one; `v1=False`: after the last step removes format 1's writer."""
    return render("record_upgrade/schema.py.j2", format=FORMAT, fields=fields, v1=v1)


def codec_module(n: Names, rng: random.Random, filler: int) -> str:
    helpers = fillers(rng, filler, {n.old, n.decode, n.upgrade})
    return render("record_upgrade/codec.py.j2", n=n, fillers=[src for _, src in helpers])


GUARD = '    if rec.get("v") == {schema}.FORMAT:\n        return rec\n'


def written(name: str, n: Names, *args: object) -> str:
    """The code a step's edit writes (the oracle's): macro `name` of functions.py.j2."""
    return snippet(FUNCTIONS, name, n, *args)


_VERBS = ("sync", "store", "import", "ingest", "copy", "load")


def caller_module(
    rng: random.Random, n: Names, pkg: str, mod: str, sites: int, filler: int, sibling: tuple[str, str] | None
) -> tuple[str, list[str], list[str]]:
    """A module whose functions turn records into format-1 lines, its tests, its filler helpers' names."""

    def site(res: str, func: str, call: str) -> tuple[str, str]:
        form, euros, first = (
            rng.randrange(3),
            rng.randint(1, 40) + rng.choice((0.25, 0.5, 0.75, 0.1)),
            rng.randint(1, 90),
        )
        if form == 0:
            recs = [{"id": first + i, "kind": res, "amount": euros + i} for i in range(2)]
            args = repr(recs)
        elif form == 1:
            items = [{"id": first}, {"id": first + 1, "amount": 2.5}]
            args = repr(items)
            recs = [{"id": it["id"], "kind": res, "amount": it.get("amount", euros)} for it in items]
        else:
            args = repr([first, first + 2])
            recs = [{"id": i, "kind": res, "amount": euros} for i in (first, first + 2)]
        want = [(r["id"], r["kind"], cents(r["amount"])) for r in recs]
        return (
            snippet(CALLERS, "site", form, func, call, res, euros),
            snippet(CALLERS, "site_test", n, pkg, mod, func, args, want),
        )

    return build.caller_module(
        rng,
        (n.core, n.codec, n.old),
        pkg,
        mod,
        f"the lines the {mod} job stores.",
        sites,
        filler,
        sibling,
        _VERBS,
        site,
    )


def retry_path(rng: random.Random, n: Names, path: str) -> tuple[str, str, str]:
    """(import line, the retry function, its test) for module `path`: a retried job's lines are
    read back and upgraded again, so upgrading a format-2 record must change nothing."""
    res, mod = rng.choice(RESOURCES), path.rsplit("/", 1)[1][:-3]
    euros = rng.randint(1, 30) + 0.5
    v2 = f'{{"v": {FORMAT}, "id": 8, "kind": "{res}", "amount": 125}}'
    test = snippet(TESTS, "retry_test", mod, res, path, f"7|{res}|{euros:.2f}", v2, cents(euros))
    return (
        f"from {n.core}.{n.codec} import {n.decode}, {n.upgrade}",
        snippet(FUNCTIONS, "retry", n, res),
        test,
    )


def export_pair(rng: random.Random, host: str, importer: str) -> tuple[str, str, str, str]:
    """(export function, its source for `host`, loader source for `importer`, a test for the
    importer's package): the export is in euros and the importer reads it so."""
    res = rng.choice(RESOURCES)
    func = f"export_{res}"
    mod, host_mod = importer.rsplit("/", 1)[1][:-3], host[:-3].replace("/", ".")
    return (
        func,
        snippet(FUNCTIONS, "exporter", func, res),
        snippet(FUNCTIONS, "loader", res, host),
        snippet(TESTS, "export_test", mod, res, func, host, host_mod, importer, FORMAT),
    )


def archive(rng: random.Random) -> tuple[str, list[tuple[int, int]]]:
    """Format-1 lines on disk and the (id, cents) they hold."""
    rows = [
        (100 + i, rng.choice(RESOURCES), rng.randint(1, 60) + rng.choice((0.0, 0.25, 0.5, 0.99)))
        for i in range(rng.randint(4, 7))
    ]
    return "".join(f"{i}|{k}|{e:.2f}\n" for i, k, e in rows), [(i, cents(e)) for i, _, e in rows]


def docs(n: Names) -> str:
    return snippet(FUNCTIONS, "docs", n)


def current_section(n: Names, fields: tuple[str, ...]) -> str:
    return snippet(FUNCTIONS, "current_section", n, CURRENT, fields)


def archive_test(n: Names, want: list[tuple[int, int]]) -> str:
    return snippet(TESTS, "archive_test", n, want)


def codec_test(n: Names) -> str:
    return snippet(TESTS, "codec_test", n, FORMAT)


def fields_test(n: Names, fields: tuple[str, ...]) -> str:
    return snippet(TESTS, "fields_test", n, fields)


def new_caller(n: Names, pkg: str, mod: str, first: int) -> tuple[str, str]:
    """A colleague's new module, still writing format 1, and its test."""
    recs = [{"id": first, "kind": "audit", "amount": 1.5}]
    return snippet(FUNCTIONS, "new_caller", n, pkg, mod), snippet(TESTS, "new_caller_test", n, pkg, mod, recs)
