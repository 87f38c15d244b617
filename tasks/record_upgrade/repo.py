"""Repository text for `record_upgrade`: seeded names, the codec and its schema, the callers'
format-1 writers, the retry path that upgrades records twice, the export another package reads
in euros, the format-1 archive on disk, docs, shipped tests and the drift commits' files.
Pure templating."""

from __future__ import annotations

import random
from dataclasses import dataclass

from tasks.common.build import RESOURCES, fillers

FORMAT = 2
FIELDS = ("id", "kind", "amount")
CURRENT = "## Format 2"


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
    def codec_path(self) -> str:
        return f"{self.core}/{self.codec}.py"

    @property
    def schema_path(self) -> str:
        return f"{self.core}/{self.schema}.py"

    @property
    def archive_path(self) -> str:
        return f"fixtures/{self.archive}.txt"


def names(rng: random.Random) -> Names:
    old, new, decode = rng.choice((("encode_v1", "encode", "decode"), ("dump_v1", "dump", "load"),
                                   ("to_line_v1", "to_line", "from_line"), ("pack_v1", "pack", "unpack"),
                                   ("format_v1", "format_line", "parse_line")))
    return Names(core=rng.choice(("records", "ledger", "entries", "journal")),
                 codec=rng.choice(("codec", "lines", "serial")), schema=rng.choice(("schema", "layout", "spec")),
                 old=old, new=new, decode=decode,
                 upgrade=rng.choice(("upgrade", "upgrade_record", "to_current", "migrate_record")),
                 parse_v1=rng.choice(("_parse_v1", "_read_v1", "_from_v1")),
                 archive=rng.choice(("archive", "history", "backup")), doc=rng.choice(("records", "format", "storage")))


def cents(euros: float) -> int:
    return round(euros * 100)


def schema_module(fields: tuple[str, ...] = FIELDS, v1: bool = True) -> str:
    """`fields`: the d-schema drift adds one; `v1=False`: after the last step removes format 1's writer."""
    sep = 'V1_SEP = "|"  # format 1: id|kind|amount, the amount in euros (written by the old writer)\n' if v1 else ""
    return ('"""The stored record format.\n\nFormat 2 (current): one JSON object per line, `amount` in cents, '
            f'FIELDS in order.\n"""\n\nFORMAT = {FORMAT}\nFIELDS = {fields!r}\n' + sep)


def codec_module(n: Names, rng: random.Random, filler: int) -> str:
    extra = "".join("\n\n" + src for _, src in fillers(rng, filler, {n.old, n.decode, n.upgrade}))
    return (f'"""Records as stored lines.\n\n`{n.old}` writes format 1 (id|kind|euros); `{n.decode}` reads both '
            f'formats and\nreturns format-2 records (amount in cents).\n"""\n\nimport json\n\n'
            f"from {n.core} import {n.schema}\n\n\n"
            f'def {n.old}(rec):\n    """A record as a format-1 line: id|kind|amount in euros."""\n'
            f'    return {n.schema}.V1_SEP.join((str(rec["id"]), rec["kind"], f\'{{rec["amount"]:.2f}}\'))\n\n\n'
            f'def {n.upgrade}(rec):\n    """A format-1 record (amount in euros) as format 2 (amount in cents)."""\n'
            f'    if rec.get("v") == {n.schema}.FORMAT:\n        return rec\n'
            f'    return {{**rec, "v": {n.schema}.FORMAT, "amount": round(rec["amount"] * 100)}}\n\n\n'
            f'def {n.parse_v1}(line):\n    """A format-1 line as a format-1 record."""\n'
            '    ident, kind, euros = line.split("|")\n'
            '    return {"id": int(ident), "kind": kind, "amount": float(euros)}\n\n\n'
            + decode_function(n) + extra)


def decode_function(n: Names, v1: bool = True) -> str:
    body = (f'    if line.startswith("{{"):\n        return json.loads(line)\n'
            f"    return {n.upgrade}({n.parse_v1}(line))\n") if v1 else "    return json.loads(line)\n"
    return f'def {n.decode}(line):\n    """A stored line as a format-2 record; format-1 lines are upgraded."""\n' + body


GUARD = '    if rec.get("v") == {schema}.FORMAT:\n        return rec\n'


def new_function(n: Names) -> str:
    return (f'def {n.new}(rec):\n    """A record as a format-2 line: one JSON object, the amount in cents."""\n'
            f"    rec = {n.upgrade}(rec)\n"
            f'    return json.dumps({{"v": {n.schema}.FORMAT, **{{f: rec.get(f) for f in {n.schema}.FIELDS}}}})\n')


def current_function() -> str:
    return 'def is_current(line):\n    """Is `line` written in format 2?"""\n    return line.startswith("{")\n'


_VERBS = ("sync", "store", "import", "ingest", "copy", "load")


def caller_module(rng: random.Random, n: Names, pkg: str, mod: str, sites: int, filler: int,
                  sibling: tuple[str, str] | None) -> tuple[str, list[str], list[str]]:
    """A module whose functions turn records into format-1 lines, its tests, its filler helpers' names."""
    attr = rng.random() < 0.3  # `from core import codec` + `codec.encode_v1(...)`
    call = f"{n.codec}.{n.old}" if attr else n.old
    head = [f'"""{pkg.capitalize()} {mod}: the lines the {mod} job stores."""', ""]
    head.append(f"from {n.core} import {n.codec}" if attr else f"from {n.core}.{n.codec} import {n.old}")
    if sibling:
        head.append(f"from {pkg}.{sibling[0]} import {sibling[1]}")
    bodies, tests, taken = [], [], set()
    for res in rng.sample(RESOURCES, sites):
        func = f"{rng.choice(_VERBS)}_{res}"
        while func in taken:
            func = f"{rng.choice(_VERBS)}_{res}"
        taken.add(func)
        form, euros, first = rng.randrange(3), rng.randint(1, 40) + rng.choice((0.25, 0.5, 0.75, 0.1)), rng.randint(1, 90)
        if form == 0:
            body = f'    """Every {res} record as a line."""\n    return [{call}(rec) for rec in recs]\n'
            recs = [{"id": first + i, "kind": res, "amount": euros + i} for i in range(2)]
            params, args = "recs", repr(recs)
        elif form == 1:
            body = (f'    """One {res} line per item, the amount defaulted to {euros}."""\n    out = []\n'
                    f"    for item in items:\n"
                    f'        out.append({call}({{"id": item["id"], "kind": "{res}", "amount": item.get("amount", {euros})}}))\n'
                    "    return out\n")
            items = [{"id": first}, {"id": first + 1, "amount": 2.5}]
            params, args = "items", repr(items)
            recs = [{"id": it["id"], "kind": res, "amount": it.get("amount", euros)} for it in items]
        else:
            body = (f'    """A {res} line for each id, all with the same amount."""\n'
                    f'    return [{call}({{"id": ident, "kind": "{res}", "amount": amount}}) for ident in ids]\n')
            params, args = f"ids, amount={euros}", repr([first, first + 2])
            recs = [{"id": i, "kind": res, "amount": euros} for i in (first, first + 2)]
        bodies.append(f"def {func}({params}):\n{body}")
        want = [(r["id"], r["kind"], cents(r["amount"])) for r in recs]
        tests.append(f"def test_{mod}_{func}():\n    from {n.core} import {n.codec}\n\n"
                     f"    got = [{n.codec}.{n.decode}(line) for line in {mod}.{func}({args})]\n"
                     '    got = [(rec["id"], rec["kind"], rec["amount"]) for rec in got]\n'
                     f'    assert got == {want!r}, "{pkg}/{mod}.py: {func} stored different records: " + repr(got)\n')
    helpers = fillers(rng, filler, taken)
    for _name, src in helpers:
        bodies.insert(rng.randint(0, len(bodies)), src)
    if sibling:
        bodies.append(f'def count_{mod}_rows(rows):\n    """How many rows the {sibling[0]} helper keeps."""\n'
                      f"    return len({sibling[1]}(rows))\n")
    return ("\n".join(head) + "\n\n\n" + "\n\n\n".join(b.rstrip("\n") for b in bodies) + "\n", tests,
            [name for name, _ in helpers])


def retry_path(rng: random.Random, n: Names, path: str) -> tuple[str, str, str]:
    """(import line, the retry function, its test) for module `path`: a retried job's lines are
    read back and upgraded again, so upgrading a format-2 record must change nothing."""
    res, mod = rng.choice(RESOURCES), path.rsplit("/", 1)[1][:-3]
    euros = rng.randint(1, 30) + 0.5
    func = (f'def retry_{res}(lines):\n    """A failed {res} job\'s lines, read back to store again (either '
            f'format)."""\n    return [{n.upgrade}({n.decode}(line)) for line in lines]\n')
    v2 = f'{{"v": {FORMAT}, "id": 8, "kind": "{res}", "amount": 125}}'
    test = (f"def test_{mod}_retry_{res}():\n    got = {mod}.retry_{res}([{f'7|{res}|{euros:.2f}'!r}, {v2!r}])\n"
            f'    assert [rec["amount"] for rec in got] == [{cents(euros)}, 125], '
            f'"{path}: retry_{res} changed the amounts: " + repr(got)\n')
    return f"from {n.core}.{n.codec} import {n.decode}, {n.upgrade}", func, test


def export_pair(rng: random.Random, host: str, importer: str) -> tuple[str, str, str, str]:
    """(export function, its source for `host`, loader source for `importer`, a test for the
    importer's package): the export is in euros and the importer reads it so."""
    res = rng.choice(RESOURCES)
    func = f"export_{res}"
    exporter = (f'def {func}(recs):\n    """The {res} export: (id, amount) pairs, the amount in euros as in '
                f'format 1."""\n    return [(rec["id"], rec["amount"] / 100) for rec in recs]\n')
    loader = (f'def load_{res}_export(pairs):\n    """Amounts in cents back from the {host} export (it is in '
              f'euros)."""\n    return {{ident: round(euros * 100) for ident, euros in pairs}}\n')
    mod, host_mod = importer.rsplit("/", 1)[1][:-3], host[:-3].replace("/", ".")
    test = (f"def test_{mod}_load_{res}_export():\n    import {host_mod}\n\n"
            f'    recs = [{{"v": {FORMAT}, "id": 3, "kind": "{res}", "amount": 1250}}]\n'
            f"    got = {mod}.load_{res}_export({host_mod}.{func}(recs))\n"
            f'    assert got == {{3: 1250}}, "{importer}: the {host} export reads back differently: " + repr(got)\n')
    return func, exporter, loader, test


def archive(rng: random.Random) -> tuple[str, list[tuple[int, int]]]:
    """Format-1 lines on disk and the (id, cents) they hold."""
    rows = [(100 + i, rng.choice(RESOURCES), rng.randint(1, 60) + rng.choice((0.0, 0.25, 0.5, 0.99)))
            for i in range(rng.randint(4, 7))]
    return "".join(f"{i}|{k}|{e:.2f}\n" for i, k, e in rows), [(i, cents(e)) for i, _, e in rows]


def docs(n: Names) -> str:
    return (f"# {n.core}.{n.codec}\n\n`{n.old}(rec)` writes format 1: `id|kind|amount`, the amount in euros.\n"
            f"`{n.decode}(line)` reads both formats.\n")


def current_section(n: Names, fields: tuple[str, ...]) -> str:
    return (f"{CURRENT}\n\n`{n.new}(rec)` writes one JSON object per line, the amount in cents.\n\n"
            "Fields, in order: " + ", ".join(f"`{f}`" for f in fields) + "\n")


def archive_test(n: Names, want: list[tuple[int, int]]) -> str:
    return (f'"""The archive on disk is format 1 (shipped; read-only)."""\n\nfrom pathlib import Path\n\n'
            f"from {n.core} import {n.codec}\n\n"
            f'ARCHIVE = Path(__file__).resolve().parent.parent / "{n.archive_path}"\n\n\n'
            "def test_the_archive_reads_back():\n"
            f"    got = [{n.codec}.{n.decode}(line) for line in ARCHIVE.read_text().splitlines()]\n"
            '    got = [(rec["id"], rec["amount"]) for rec in got]\n'
            f'    assert got == {want!r}, "{n.codec_path}: {n.archive_path} reads back differently: " + repr(got)\n')


def codec_test(n: Names) -> str:
    return (f'"""Both formats read back as format 2 (shipped; read-only)."""\n\nfrom {n.core} import {n.codec}\n\n\n'
            "def test_a_format_1_line_is_upgraded():\n"
            f'    got = {n.codec}.{n.decode}("4|x|2.50")\n'
            f'    assert got == {{"id": 4, "kind": "x", "amount": 250, "v": {FORMAT}}}, "{n.codec_path}: " + repr(got)\n')


def fields_test(n: Names, fields: tuple[str, ...]) -> str:
    return (f'"""Format 2 carries the currency (added with it)."""\n\nfrom {n.core} import {n.schema}\n\n\n'
            f"def test_the_fields_carry_the_currency():\n"
            f'    assert {n.schema}.FIELDS == {fields!r}, "{n.schema_path}: FIELDS must be {fields!r}"\n')


def new_caller(n: Names, pkg: str, mod: str, first: int) -> tuple[str, str]:
    """A colleague's new module, still writing format 1, and its test."""
    src = (f'"""{pkg.capitalize()} {mod}: the weekly audit lines."""\n\nfrom {n.core}.{n.codec} import {n.old}\n\n\n'
           f'def audit_lines(recs):\n    """The audit records as lines."""\n    return [{n.old}(rec) for rec in recs]\n')
    recs = [{"id": first, "kind": "audit", "amount": 1.5}]
    test = (f'"""The {pkg}.{mod} audit lines (added with it)."""\n\nfrom {n.core} import {n.codec}\n'
            f"from {pkg} import {mod}\n\n\ndef test_{mod}_audit_lines():\n"
            f"    got = [{n.codec}.{n.decode}(line)['amount'] for line in {mod}.audit_lines({recs!r})]\n"
            f'    assert got == [150], "{pkg}/{mod}.py: audit_lines stored " + repr(got)\n')
    return src, test
