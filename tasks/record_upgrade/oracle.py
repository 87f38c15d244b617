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

from tasks.common import build
from tasks.common import cleanups as common
from tasks.common.oracle import FamilyOracle, KindHook, adds_function, put_section
from tasks.record_upgrade import repo
from tasks.spec import Cleanup, Edit

EUROS = '["amount"] / 100'


class Oracle(FamilyOracle[repo.Names]):
    def kinds(self) -> Mapping[str, KindHook]:
        n = self.n
        return {
            "create": adds_function(n.codec_path, n.new, n.old, lambda: repo.written("new_function", n)),
            "tidy": adds_function(
                n.codec_path, "is_current", n.decode, lambda: repo.written("current_function", n)
            ),
            "docs": self._docs,
            "final": self._final,
        }

    def _docs(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        section = repo.current_section(self.n, fields(perceived[self.n.schema_path]))
        return put_section(self.n.doc_path, perceived[self.n.doc_path], repo.CURRENT, section)

    def _final(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n, codec, schema = self.n, self.n.codec_path, self.n.schema_path
        ed = build.FileEditor(codec, perceived[codec])
        build.delete_def(ed, n.old)
        edits = ed.edits
        text = perceived[schema]  # small: rewritten whole, from the copy held
        kept = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("V1_SEP"))
        if kept != text:
            edits.append(Edit(schema, "write", content=kept))
        return edits

    def unswept(self) -> tuple[str, ...]:
        return self.n.codec_path, self.n.schema_path

    def sweep(self, kind: str, path: str, perceived: Mapping[str, str]) -> list[Edit]:
        ed = build.FileEditor(path, perceived[path])
        _migrate(ed, self.n)
        return ed.edits

    def invites(self, path: str, text: str, perceived: Mapping[str, str]) -> list[Cleanup]:
        if not build.in_scope(path, ("",)):
            return []
        out = (
            _drop_guard(self.n, path, text) + _drop_v1(self.n, path, text)
            if path == self.n.codec_path
            else []
        )
        for name in common.top_defs(text):
            span = build.def_span(text, name)
            if span and EUROS in text[span[0] : span[1]]:
                ed = build.FileEditor(path, text)
                ed.replace_span(span[0], span[1], text[span[0] : span[1]].replace(EUROS, '["amount"]'))
                out.append(
                    Cleanup(
                        f"finish-cents:{path}:{name}",
                        (name, "euros"),
                        tuple(ed.edits),
                        f"{name} still converts amounts to euros as format 1 did: export cents",
                    )
                )
        return out


def _drop_guard(n: repo.Names, path: str, text: str) -> list[Cleanup]:
    span, guard = build.def_span(text, n.upgrade), repo.GUARD.format(schema=n.schema)
    if not span or guard not in text[span[0] : span[1]]:
        return []
    ed = build.FileEditor(path, text)
    at = text.index(guard, span[0])
    ed.replace_span(at, at + len(guard), "")
    return [
        Cleanup(
            f"drop-guard:{path}:{n.upgrade}",
            (n.upgrade, "version"),
            tuple(ed.edits),
            f"drop the version check of {n.upgrade}: every caller passes a format-1 record",
        )
    ]


def _drop_v1(n: repo.Names, path: str, text: str) -> list[Cleanup]:
    """Once the format-2 writer exists, the reader's format-1 branch looks like the migration's leftover."""
    span = build.def_span(text, n.decode)
    if f"def {n.new}(" not in text or not span or n.parse_v1 not in text[span[0] : span[1]]:
        return []
    ed = build.FileEditor(path, text)
    ed.replace_span(span[0], span[1], repo.written("decode_function", n, False))
    build.delete_def(ed, n.parse_v1)
    return [
        Cleanup(
            f"v1-branch:{path}:{n.decode}",
            (n.decode, "format-1"),
            tuple(ed.edits),
            f"drop the format-1 branch of {n.decode} and {n.parse_v1}: everything writes format 2 now",
        )
    ]


def fields(schema_text: str) -> tuple[str, ...]:
    """FIELDS as the schema's text has them."""
    tree = build.parse(schema_text)
    for x in tree.body if tree else ():
        if (
            isinstance(x, ast.Assign)
            and getattr(x.targets[0], "id", "") == "FIELDS"
            and isinstance(x.value, ast.Tuple)
        ):
            return tuple(str(getattr(e, "value", "")) for e in x.value.elts)
    return ()


def _migrate(ed: build.FileEditor, n: repo.Names) -> None:
    """`encode_v1(x)` -> `encode(x)` (and `codec.encode_v1` -> `codec.encode`); the import of the
    old writer becomes one of the new once nothing calls the old."""
    tree = build.parse(ed.text)
    if tree is None:
        return
    starts = build.offsets(ed.text)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and build.callee(node) == n.old:
            func = build.segment(ed.text, node.func, starts)
            found.append((node.func, func[: -len(n.old)] + n.new))
    build.replace_nodes(ed, found)
    build.swap_unused_import(ed, f"{n.core}.{n.codec}", n.old, n.new)
