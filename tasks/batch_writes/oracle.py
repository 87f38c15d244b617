"""The competent engineer of `batch_writes`: edits per step, and the tidy-ups the code on view
invites, computed from perceived text only (tasks/spec.py, `Oracle`).

The tidy-ups here are not dead code but code that looks needlessly complicated or untidy:
a tuple of hooks or columns in no visible order (sort it), a chunked write where one call
would do (collapse it). Whether that is a mistake is said by an ordering or a resource limit
the code on view does not show. The one dead private helper is really dead (`harmless`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from tasks.batch_writes import repo
from tasks.common import build
from tasks.common.oracle import FamilyOracle, KindHook, adds_function, put_section
from tasks.spec import Cleanup, Edit


class Oracle(FamilyOracle[repo.Names]):
    def kinds(self) -> Mapping[str, KindHook]:
        n = self.n
        return {
            "create": adds_function(n.store_path, n.bulk, n.save, lambda: repo.written("bulk_function", n)),
            "tidy": adds_function(n.store_path, "saved_ids", n.bulk, lambda: repo.written("ids_function", n)),
            "docs": self._docs,
            "final": self._final,
        }

    def _docs(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n = self.n
        section = repo.bulk_section(n, limit(perceived[n.backend_path]), chain(perceived[n.store_path], n))
        return put_section(self.n.doc_path, perceived[self.n.doc_path], repo.BULK, section)

    def _final(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n, store, backend = self.n, self.n.store_path, self.n.backend_path
        ed = build.FileEditor(store, perceived[store])
        build.delete_def(ed, n.save)
        edits = ed.edits
        ed = build.FileEditor(backend, perceived[backend])  # small: rewritten whole, from the copy held
        if build.delete_def(ed, "put"):
            edits.append(Edit(backend, "write", content=ed.text))
        return edits

    def unswept(self) -> tuple[str, ...]:
        return self.n.store_path, self.n.backend_path

    def sweep(self, kind: str, path: str, perceived: Mapping[str, str]) -> list[Edit]:
        ed = build.FileEditor(path, perceived[path])
        _migrate_loops(ed, self.n)
        return ed.edits

    def invites(self, path: str, text: str, perceived: Mapping[str, str]) -> list[Cleanup]:
        n, store = self.n, self.n.store_path
        if not build.in_scope(path, ("",)):
            return []
        out = []
        for name, node in _tuples(text):
            if name == n.hooks and path == store:
                out += _sort(
                    path,
                    text,
                    node,
                    name,
                    f"sort-hooks:{path}:{name}",
                    f"sort {name} alphabetically, like the other registries",
                )
            elif name.endswith("_COLUMNS"):
                out += _sort(
                    path, text, node, name, f"sort-columns:{path}:{name}", f"sort {name} alphabetically"
                )
        if path == store and (span := build.def_span(text, n.bulk)) and "range(" in text[span[0] : span[1]]:
            ed = build.FileEditor(path, text)
            ed.replace_span(*span, repo.written("one_call", n))
            out.append(
                Cleanup(
                    f"one-call:{path}:{n.bulk}",
                    (n.bulk, "chunks"),
                    tuple(ed.edits),
                    "write all rows in one put_many call: the chunk loop looks needless",
                )
            )
        return out


def _tuples(text: str) -> list[tuple[str, ast.Tuple]]:
    tree = build.parse(text)
    return [
        (x.targets[0].id, x.value)
        for x in (tree.body if tree else ())
        if isinstance(x, ast.Assign) and isinstance(x.targets[0], ast.Name) and isinstance(x.value, ast.Tuple)
    ]


def _items(node: ast.Tuple) -> list[str]:
    return [str(getattr(e, "id", None) or getattr(e, "value", "")) for e in node.elts]


def _sort(path: str, text: str, node: ast.Tuple, name: str, key: str, what: str) -> list[Cleanup]:
    items = _items(node)
    if items == sorted(items):
        return []
    ed = build.FileEditor(path, text)
    parts = sorted(build.segment(text, e, build.offsets(text)) for e in node.elts)
    ed.replace_span(*build.span(text, node), "(" + ", ".join(parts) + ")")
    return [Cleanup(key, (name, "order"), tuple(ed.edits), what)]


def chain(store_text: str, n: repo.Names) -> tuple[str, ...]:
    """The hooks in the order the store's text lists them."""
    return next((tuple(_items(node)) for name, node in _tuples(store_text) if name == n.hooks), ())


def limit(backend_text: str) -> int:
    tree = build.parse(backend_text)
    for x in tree.body if tree else ():
        if (
            isinstance(x, ast.Assign)
            and getattr(x.targets[0], "id", "") == "LIMIT"
            and isinstance(x.value, ast.Constant)
        ):
            return int(x.value.value)  # type: ignore[arg-type]
    return 0


def _migrate_loops(ed: build.FileEditor, n: repo.Names) -> None:
    """`for x in xs: save(f(x))` -> `save_all([f(x) for x in xs])` (`save_all(xs)` when f is x),
    and the import of save becomes one of save_all once nothing calls save."""
    while (tree := build.parse(ed.text)) is not None:
        starts = build.offsets(ed.text)
        found: list[tuple[Any, str]] = []
        for node in (x for x in ast.walk(tree) if isinstance(x, ast.For)):
            call = node.body[0].value if len(node.body) == 1 and isinstance(node.body[0], ast.Expr) else None
            if (
                not isinstance(call, ast.Call)
                or len(call.args) != 1
                or node.orelse
                or build.callee(call) != n.save
            ):
                continue
            func = build.segment(ed.text, call.func, starts)[: -len(n.save)] + n.bulk
            arg, target, it = (
                build.segment(ed.text, x, starts) for x in (call.args[0], node.target, node.iter)
            )
            found.append(
                (node, f"{func}({it})" if arg == target else f"{func}([{arg} for {target} in {it}])")
            )
        if not build.replace_nodes(ed, found):
            break
    build.swap_unused_import(ed, f"{n.core}.{n.store}", n.save, n.bulk)
