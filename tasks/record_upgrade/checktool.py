"""The project's own check tool, shipped read-only in every generated repository of
`record_upgrade` (tools/check_records.py), on the pattern of the other families' tools: an
@NAME@ template; every problem prints as `path:line: reason`, since the simulated model
re-reads the files a failing check names."""

from __future__ import annotations

from tasks.common import walker
from tasks.record_upgrade import repo as ru

_TOOL = '''"""Checks for moving the writers of @OLD@ (format 1) to @NEW@ (format 2) (shipped with the task; read-only).

    python3 -B tools/check_records.py new | retry | export | archive | migrated PATH... | current | docs PATH | final

Each problem prints as `path:line: reason`; the exit code is 1 if there is any.
"""

import ast
import importlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OLD, NEW, DECODE, UPGRADE = "@OLD@", "@NEW@", "@DECODE@", "@UPGRADE@"
CODEC, SCHEMA, ARCHIVE = "@CORE@/@CODEC@.py", "@CORE@/@SCHEMA@.py", "@ARCHIVE@"
EXPORT = @EXPORT@  # (module, function): an export another package reads in euros
SKIP = {"tests", "tools", "docs", "fixtures"}


@SOURCES@


def writers(paths):
    out = []
    for path in sources(paths):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Call) and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == OLD:
                out.append(f"{rel}:{node.lineno}: {OLD}(...) writes format 1; write the record with {NEW}(rec)")
    return out


def new():
    from @CORE@ import @CODEC@, @SCHEMA@
    fn = getattr(@CODEC@, NEW, None)
    if fn is None:
        return [f"{CODEC}:1: no {NEW}(rec)"]
    try:
        line = fn({"id": 4, "kind": "x", "amount": 2.5})
        got = json.loads(line)
    except Exception as exc:
        return [f"{CODEC}:1: {NEW} failed on a record: {exc}"]
    fields = tuple(@SCHEMA@.FIELDS)
    want = {"v": @SCHEMA@.FORMAT, **{f: None for f in fields}, "id": 4, "kind": "x", "amount": 250}
    if got != want or list(got) != ["v", *fields]:
        return [f"{CODEC}:1: {NEW} must write one JSON object: v, then the fields of {SCHEMA} in order {fields}, "
                f"the amount in cents; wrote {line}"]
    return []


def retry():
    from @CORE@ import @CODEC@
    up = getattr(@CODEC@, UPGRADE)
    once = dict(up({"id": 1, "kind": "x", "amount": 2.5}))
    twice = dict(up(dict(once)))
    if once.get("amount") != 250 or twice != once:
        return [f"{CODEC}:1: {UPGRADE} must change nothing the second time (a retried job upgrades format-2 "
                f"records again): {once} -> {twice}"]
    return []


def export():
    if EXPORT is None:
        return []
    module, func = EXPORT
    got = [tuple(x) for x in getattr(importlib.import_module(module), func)([{"v": 2, "id": 1, "kind": "x", "amount": 250}])]
    where = module.replace(".", "/") + ".py"
    return [] if got == [(1, 2.5)] else [f"{where}:1: {func} exports {got}; its reader takes euros: [(1, 2.5)]"]


def archive():
    from @CORE@ import @CODEC@
    out = []
    for i, line in enumerate((ROOT / ARCHIVE).read_text().splitlines(), 1):
        try:
            rec = dict(getattr(@CODEC@, DECODE)(line))
        except Exception as exc:
            out.append(f"{ARCHIVE}:{i}: {DECODE} of {CODEC} cannot read this format-1 line: {exc}")
            continue
        ident, kind, euros = line.split("|")
        if (rec.get("id"), rec.get("kind"), rec.get("amount")) != (int(ident), kind, round(float(euros) * 100)):
            out.append(f"{ARCHIVE}:{i}: {DECODE} of {CODEC} reads {rec}")
    return out


def current():
    from @CORE@ import @CODEC@
    fn = getattr(@CODEC@, "is_current", None)
    if fn is None:
        return [f"{CODEC}:1: no is_current(line)"]
    return [] if (fn('{"v": 2}'), fn("1|x|2.00")) == (True, False) else [f"{CODEC}:1: is_current is wrong"]


def docs(paths):
    from @CORE@ import @SCHEMA@
    out = []
    for p in paths:
        text = (ROOT / p).read_text()
        if f"`{NEW}(rec)` writes one JSON object per line, the amount in cents." not in text:
            out.append(f"{p}:1: does not document {NEW}(rec)")
        fields = "Fields, in order: " + ", ".join(f"`{f}`" for f in @SCHEMA@.FIELDS)
        if fields not in text:
            out.append(f"{p}:1: does not list the fields of {SCHEMA} in order: {fields}")
    return out


def final():
    from @CORE@ import @CODEC@, @SCHEMA@
    out = doubt(CODEC, SCHEMA)
    if bindings(CODEC, OLD) or hasattr(@CODEC@, OLD):  # read from the source (FACTS), and asked
        out.append(f"{CODEC}:1: {OLD} must be gone: every writer writes format 2")
    if bindings(SCHEMA, "V1_SEP") or hasattr(@SCHEMA@, "V1_SEP"):
        out.append(f"{SCHEMA}:1: V1_SEP must be gone: nothing writes format 1")
    return out + writers(["."])


def main(argv):
    cmd, rest = argv[0], argv[1:]
    problems = {"new": new, "retry": retry, "export": export, "archive": archive, "current": current,
                "final": final}.get(cmd)
    if problems is None and cmd not in ("migrated", "docs"):
        raise SystemExit(f"unknown check {cmd!r}")
    problems = problems() if problems else writers(rest) if cmd == "migrated" else docs(rest)
    print("\\n".join(problems) or f"ok: {cmd}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def tool(n: ru.Names, export: tuple[str, str] | None) -> str:
    """`export`: (module path, function), if the task has one."""
    where = (export[0].removesuffix(".py").replace("/", "."), export[1]) if export else None
    return walker.shipped(
        _TOOL,
        {
            "OLD": n.old,
            "NEW": n.new,
            "DECODE": n.decode,
            "UPGRADE": n.upgrade,
            "CORE": n.core,
            "CODEC": n.codec,
            "SCHEMA": n.schema,
            "ARCHIVE": n.archive_path,
            "EXPORT": repr(where),
        },
    )
