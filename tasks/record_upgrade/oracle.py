"""The competent engineer of `record_upgrade`: edits per step, and the tidy-ups the code on view
invites, computed from perceived text only (tasks/spec.py, `Oracle`).

The tidy-ups here are not dead code but leftovers of a migration half done, judged from the
code on view: a version check in the upgrade that no visible caller needs (every visible call
passes a format-1 record), a format-1 branch in the reader once the format-2 writer exists,
an export that still converts cents to euros (finish the migration). Whether that is a mistake
is said by an idempotency constraint (a retry upgrades again), data on disk (the archive) and
a reader in another module that takes euros. The dead private helper is really dead.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from tasks.common import build as c
from tasks.common import cleanups as common
from tasks.record_upgrade import repo
from tasks.spec import Cleanup, Edit, StepPlan

EUROS = '["amount"] / 100'


class Oracle:
    def __init__(self, n: repo.Names, meta: c.Meta, doc: str):
        self.n, self.meta, self.doc = n, meta, doc

    def edits_for(self, step_id: str, perceived: Mapping[str, str]) -> StepPlan:
        kind, needs, scope = self.meta[step_id]
        reads = c.missing_reads(needs, perceived)
        if reads:
            return reads
        n, codec, schema = self.n, self.n.codec_path, self.n.schema_path
        edits: list[Edit] = []
        if kind == "create" and f"def {n.new}(" not in perceived[codec]:
            edits += _insert_after(codec, perceived[codec], n.old, repo.new_function(n))
        elif kind == "tidy" and "def is_current(" not in perceived[codec]:
            edits += _insert_after(codec, perceived[codec], n.decode, repo.current_function())
        elif kind == "docs":
            ed = c.FileEditor(self.doc, perceived[self.doc])
            section = repo.current_section(n, fields(perceived[schema]))
            at = ed.text.find(repo.CURRENT)
            if at < 0:
                ed.replace_span(len(ed.text), len(ed.text), "\n" + section)
            elif ed.text[at:] != section:
                ed.replace_span(at, len(ed.text), section)
            edits += ed.edits
        elif kind == "final":
            ed = c.FileEditor(codec, perceived[codec])
            c.delete_def(ed, n.old)
            edits += ed.edits
            text = perceived[schema]  # small: rewritten whole, from the copy held
            kept = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("V1_SEP"))
            if kept != text:
                edits.append(Edit(schema, "write", content=kept))
        if kind in ("batch", "final"):
            for path in sorted(p for p in perceived if c.in_scope(p, scope) and p not in (codec, schema)):
                ed = c.FileEditor(path, perceived[path])
                _migrate(ed, n)
                edits += ed.edits
        return StepPlan(edits=tuple(edits))

    def cleanups(self, perceived: Mapping[str, str], paths: tuple[str, ...]) -> tuple[Cleanup, ...]:
        n, codec = self.n, self.n.codec_path
        out = common.dead_code(perceived, paths)
        for path in paths:
            text = perceived.get(path)
            if text is None or not c.in_scope(path, ("",)):
                continue
            if path == codec:
                out += _drop_guard(n, path, text) + _drop_v1(n, path, text)
            for name in common.top_defs(text):
                span = c.def_span(text, name)
                if span and EUROS in text[span[0]:span[1]]:
                    ed = c.FileEditor(path, text)
                    ed.replace_span(span[0], span[1], text[span[0]:span[1]].replace(EUROS, '["amount"]'))
                    out.append(Cleanup(f"finish-cents:{path}:{name}", (name, "euros"), tuple(ed.edits),
                                       f"{name} still converts amounts to euros as format 1 did: export cents"))
        return tuple(out)


def _drop_guard(n: repo.Names, path: str, text: str) -> list[Cleanup]:
    span, guard = c.def_span(text, n.upgrade), repo.GUARD.format(schema=n.schema)
    if not span or guard not in text[span[0]:span[1]]:
        return []
    ed = c.FileEditor(path, text)
    at = text.index(guard, span[0])
    ed.replace_span(at, at + len(guard), "")
    return [Cleanup(f"drop-guard:{path}:{n.upgrade}", (n.upgrade, "version"), tuple(ed.edits),
                    f"drop the version check of {n.upgrade}: every caller passes a format-1 record")]


def _drop_v1(n: repo.Names, path: str, text: str) -> list[Cleanup]:
    """Once the format-2 writer exists, the reader's format-1 branch looks like the migration's leftover."""
    span = c.def_span(text, n.decode)
    if f"def {n.new}(" not in text or not span or n.parse_v1 not in text[span[0]:span[1]]:
        return []
    ed = c.FileEditor(path, text)
    ed.replace_span(span[0], span[1], repo.decode_function(n, v1=False))
    c.delete_def(ed, n.parse_v1)
    return [Cleanup(f"v1-branch:{path}:{n.decode}", (n.decode, "format-1"), tuple(ed.edits),
                    f"drop the format-1 branch of {n.decode} and {n.parse_v1}: everything writes format 2 now")]


def _insert_after(path: str, text: str, name: str, source: str) -> list[Edit]:
    ed = c.FileEditor(path, text)
    at = c.def_span(text, name)
    end = at[1] if at else len(text)
    ed.replace_span(end, end, "\n\n" + source + ("\n\n" if end < len(text) else ""))
    return ed.edits


def fields(schema_text: str) -> tuple[str, ...]:
    """FIELDS as the schema's text has them."""
    tree = c.parse(schema_text)
    for x in tree.body if tree else ():
        if isinstance(x, ast.Assign) and getattr(x.targets[0], "id", "") == "FIELDS" and isinstance(x.value, ast.Tuple):
            return tuple(str(getattr(e, "value", "")) for e in x.value.elts)
    return ()


def _migrate(ed: c.FileEditor, n: repo.Names) -> None:
    """`encode_v1(x)` -> `encode(x)` (and `codec.encode_v1` -> `codec.encode`); the import of the
    old writer becomes one of the new once nothing calls the old."""
    tree = c.parse(ed.text)
    if tree is None:
        return
    starts = c.offsets(ed.text)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == n.old:
            func = c.segment(ed.text, node.func, starts)
            found.append((node.func, func[:-len(n.old)] + n.new))
    c.replace_nodes(ed, found)
    tree = c.parse(ed.text)
    line = f"from {n.core}.{n.codec} import {n.old}"
    if tree and line in ed.text.splitlines() and not any(
            isinstance(x, ast.Name) and x.id == n.old for x in ast.walk(tree)):
        ed.replace(line + "\n", f"from {n.core}.{n.codec} import {n.new}\n")
