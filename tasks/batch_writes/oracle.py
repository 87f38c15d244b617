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
from tasks.common import build as c
from tasks.common import cleanups as common
from tasks.spec import Cleanup, Edit, StepPlan


class Oracle:
    def __init__(self, n: repo.Names, meta: c.Meta, doc: str):
        self.n, self.meta, self.doc = n, meta, doc

    def edits_for(self, step_id: str, perceived: Mapping[str, str]) -> StepPlan:
        kind, needs, scope = self.meta[step_id]
        reads = c.missing_reads(needs, perceived)
        if reads:
            return reads
        n, store, backend = self.n, self.n.store_path, self.n.backend_path
        edits: list[Edit] = []
        if kind == "create" and f"def {n.bulk}(" not in perceived[store]:
            edits += _insert_after(store, perceived[store], n.save, repo.bulk_function(n))
        elif kind == "tidy" and "def saved_ids(" not in perceived[store]:
            edits += _insert_after(store, perceived[store], n.bulk, repo.ids_function(n))
        elif kind == "docs":
            ed = c.FileEditor(self.doc, perceived[self.doc])
            section = repo.bulk_section(n, limit(perceived[backend]), chain(perceived[store], n))
            at = ed.text.find(repo.BULK)
            if at < 0:
                ed.replace_span(len(ed.text), len(ed.text), "\n" + section)
            elif ed.text[at:] != section:
                ed.replace_span(at, len(ed.text), section)
            edits += ed.edits
        elif kind == "final":
            ed = c.FileEditor(store, perceived[store])
            c.delete_def(ed, n.save)
            edits += ed.edits
            ed = c.FileEditor(backend, perceived[backend])  # small: rewritten whole, from the copy held
            if c.delete_def(ed, "put"):
                edits.append(Edit(backend, "write", content=ed.text))
        if kind in ("batch", "final"):
            for path in sorted(p for p in perceived if c.in_scope(p, scope) and p not in (store, backend)):
                ed = c.FileEditor(path, perceived[path])
                _migrate_loops(ed, n)
                edits += ed.edits
        return StepPlan(edits=tuple(edits))

    def cleanups(self, perceived: Mapping[str, str], paths: tuple[str, ...]) -> tuple[Cleanup, ...]:
        n, store = self.n, self.n.store_path
        out = common.dead_code(perceived, paths)
        for path in paths:
            text = perceived.get(path)
            if text is None or not c.in_scope(path, ("",)):
                continue
            for name, node in _tuples(text):
                if name == n.hooks and path == store:
                    out += _sort(path, text, node, name, f"sort-hooks:{path}:{name}",
                                 f"sort {name} alphabetically, like the other registries")
                elif name.endswith("_COLUMNS"):
                    out += _sort(path, text, node, name, f"sort-columns:{path}:{name}",
                                 f"sort {name} alphabetically")
            if path == store and (span := c.def_span(text, n.bulk)) and "range(" in text[span[0]:span[1]]:
                ed = c.FileEditor(path, text)
                ed.replace_span(*span, repo.one_call(n))
                out.append(Cleanup(f"one-call:{path}:{n.bulk}", (n.bulk, "chunks"), tuple(ed.edits),
                                   "write all rows in one put_many call: the chunk loop looks needless"))
        return tuple(out)


def _insert_after(path: str, text: str, name: str, source: str) -> list[Edit]:
    ed = c.FileEditor(path, text)
    at = c.def_span(text, name)
    end = at[1] if at else len(text)
    ed.replace_span(end, end, "\n\n" + source + ("\n\n" if end < len(text) else ""))
    return ed.edits


def _tuples(text: str) -> list[tuple[str, ast.Tuple]]:
    tree = c.parse(text)
    return [(x.targets[0].id, x.value) for x in (tree.body if tree else ()) if isinstance(x, ast.Assign)
            and isinstance(x.targets[0], ast.Name) and isinstance(x.value, ast.Tuple)]


def _items(node: ast.Tuple) -> list[str]:
    return [str(getattr(e, "id", None) or getattr(e, "value", "")) for e in node.elts]


def _sort(path: str, text: str, node: ast.Tuple, name: str, key: str, what: str) -> list[Cleanup]:
    items = _items(node)
    if items == sorted(items):
        return []
    ed = c.FileEditor(path, text)
    parts = sorted(c.segment(text, e, c.offsets(text)) for e in node.elts)
    ed.replace_span(*c.span(text, node), "(" + ", ".join(parts) + ")")
    return [Cleanup(key, (name, "order"), tuple(ed.edits), what)]


def chain(store_text: str, n: repo.Names) -> tuple[str, ...]:
    """The hooks in the order the store's text lists them."""
    return next((tuple(_items(node)) for name, node in _tuples(store_text) if name == n.hooks), ())


def limit(backend_text: str) -> int:
    tree = c.parse(backend_text)
    for x in tree.body if tree else ():
        if isinstance(x, ast.Assign) and getattr(x.targets[0], "id", "") == "LIMIT" and isinstance(x.value, ast.Constant):
            return int(x.value.value)  # type: ignore[arg-type]
    return 0


def _migrate_loops(ed: c.FileEditor, n: repo.Names) -> None:
    """`for x in xs: save(f(x))` -> `save_all([f(x) for x in xs])` (`save_all(xs)` when f is x),
    and the import of save becomes one of save_all once nothing calls save."""
    while (tree := c.parse(ed.text)) is not None:
        starts = c.offsets(ed.text)
        found: list[tuple[Any, str]] = []
        for node in (x for x in ast.walk(tree) if isinstance(x, ast.For)):
            call = node.body[0].value if len(node.body) == 1 and isinstance(node.body[0], ast.Expr) else None
            if not isinstance(call, ast.Call) or len(call.args) != 1 or node.orelse or \
                    (getattr(call.func, "id", None) or getattr(call.func, "attr", None)) != n.save:
                continue
            func = c.segment(ed.text, call.func, starts)[:-len(n.save)] + n.bulk
            arg, target, it = (c.segment(ed.text, x, starts) for x in (call.args[0], node.target, node.iter))
            found.append((node, f"{func}({it})" if arg == target else f"{func}([{arg} for {target} in {it}])"))
        if not c.replace_nodes(ed, found):
            break
    tree = c.parse(ed.text)
    line = f"from {n.core}.{n.store} import {n.save}"
    if tree and line in ed.text.splitlines() and not any(
            isinstance(x, ast.Name) and x.id == n.save for x in ast.walk(tree)):
        ed.replace(line + "\n", f"from {n.core}.{n.store} import {n.bulk}\n")
