"""The competent engineer of `config_rename`: edits per step, and the tidy-ups the code on
view invites, computed from perceived text only (tasks/spec.py, `Oracle`)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Any

from tasks.common import build
from tasks.common.oracle import FamilyOracle, KindHook
from tasks.config_rename import repo
from tasks.spec import Cleanup, Edit

DOCS = ("docs/configuration.md", "docs/deploy.md")


class Oracle(FamilyOracle[repo.Names]):
    """A competent engineer's edits for each step, computed only from perceived text."""

    def kinds(self) -> Mapping[str, KindHook]:
        return {"create": self._create, "tidy": self._tidy, "docs": self._docs, "final": self._final}

    def _create(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n = self.n
        return (
            []
            if f"def {n.acc}(" in perceived.get(n.settings, "")
            else [Edit(n.settings, "write", content=repo.settings_module(n))]
        )

    def _tidy(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n = self.n
        ed = build.FileEditor(n.settings, perceived[n.settings])
        if build.def_span(ed.text, f"{n.acc}_int") is None and (at := build.def_span(ed.text, n.acc)):
            ed.replace_span(at[1], at[1], "\n\n" + repo.written("int_function", n))
        return ed.edits

    def _docs(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        default = template_default(perceived[f"{self.n.app}/config.py"], self.n)
        return self._rename_in(DOCS, perceived, default)

    def _final(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        return self._rename_in(
            sorted(
                p
                for p in perceived
                if p.endswith((".md", ".json")) and not p.startswith(("tests/", "tools/", "fixtures/"))
            ),
            perceived,
        )

    def _rename_in(
        self, paths: Iterable[str], perceived: Mapping[str, str], default: object = None
    ) -> list[Edit]:
        """The key renamed in docs and data; in the docs, the table's default as config.py has it."""
        edits = []
        for path in paths:
            ed = build.FileEditor(path, perceived[path])
            _rename_text(ed, self.n)
            if default is not None:
                _document_default(ed, self.n, default)
            edits += ed.edits
        return edits

    def unswept(self) -> tuple[str, ...]:
        return (self.n.settings,)

    def sweep(self, kind: str, path: str, perceived: Mapping[str, str]) -> list[Edit]:
        ed = build.FileEditor(path, perceived[path])
        _migrate_reads(ed, self.n)
        if (
            path == f"{self.n.app}/config.py" and ed.edits
        ):  # a small module: rewritten whole, from the copy on view
            return [Edit(path, "write", content=ed.text)]
        return ed.edits

    def invites(self, path: str, text: str, perceived: Mapping[str, str]) -> list[Cleanup]:
        n = self.n
        if path != n.settings:
            return []
        ed = build.FileEditor(n.settings, text)
        _drop_fallback(ed, n)
        return (
            [
                Cleanup(
                    f"fallback:{n.settings}:{n.acc}",
                    (n.acc, "fallback"),
                    tuple(ed.edits),
                    f"delete the fallback to {n.old!r} from {n.acc}: no visible code names it",
                )
            ]
            if ed.edits
            else []
        )


def _migrate_reads(ed: build.FileEditor, n: repo.Names) -> None:
    """cfg["old"] / cfg.get("old", d) -> acc(cfg, "new"[, d]); any other "old" literal -> "new"."""
    via_accessor = False

    def is_old(x: ast.AST) -> bool:
        return isinstance(x, ast.Constant) and x.value == n.old

    while n.old in ed.text and (tree := build.parse(ed.text)) is not None:
        starts = build.offsets(ed.text)
        reads: list[tuple[Any, str]] = []
        literals: list[tuple[Any, str]] = []
        x: Any
        for x in ast.walk(tree):
            if isinstance(x, ast.Subscript) and is_old(x.slice) and isinstance(x.ctx, ast.Load):
                reads.append((x, f'{n.acc}({build.segment(ed.text, x.value, starts)}, "{n.new}")'))
            elif (
                isinstance(x, ast.Call)
                and getattr(x.func, "attr", None) == "get"
                and x.args
                and is_old(x.args[0])
            ):
                extra = "".join(", " + build.segment(ed.text, a, starts) for a in x.args[1:])
                owner = x.func.value  # type: ignore[attr-defined]  # an Attribute: `.get` was matched
                reads.append((x, f'{n.acc}({build.segment(ed.text, owner, starts)}, "{n.new}"{extra})'))
            elif is_old(x):
                literals.append((x, f'"{n.new}"'))
        if not build.replace_nodes(ed, reads or literals):  # reads first: their literal is inside them
            break
        via_accessor = via_accessor or bool(reads)
    if via_accessor:
        build.add_import(ed, f"from {n.app}.{n.smod} import {n.acc}")


def _rename_text(ed: build.FileEditor, n: repo.Names) -> None:
    word = re.compile(rf"\b{re.escape(n.old)}\b")
    while m := word.search(ed.text):
        lo = ed.text.rfind("\n", 0, m.start()) + 1
        hi = ed.text.find("\n", m.start()) + 1 or len(ed.text)
        ed.replace_span(lo, hi, word.sub(n.new, ed.text[lo:hi]))


def _drop_fallback(ed: build.FileEditor, n: repo.Names) -> None:
    """The tempting clean-up: the alias loop and the ALIASES table."""
    for pick_node in (
        lambda x: isinstance(x, ast.For),
        lambda x: isinstance(x, ast.Assign) and getattr(x.targets[0], "id", "") == "ALIASES",
    ):
        tree = build.parse(ed.text)
        if tree is None:
            return
        starts = build.offsets(ed.text)
        node: Any = next((x for x in ast.walk(tree) if pick_node(x)), None)
        if node is not None:
            ed.replace_span(starts[node.lineno - 1], starts[node.end_lineno or node.lineno], "")


def template_default(config_text: str, n: repo.Names) -> object:
    """The value `template()` writes for the key (old or new name), read from the module's text."""
    tree = build.parse(config_text)
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value in (n.old, n.new) and isinstance(v, ast.Constant):
                    return v.value
    return None


def _document_default(ed: build.FileEditor, n: repo.Names, default: object) -> None:
    """The key's row in a docs table shows `default` in its last cell."""
    if default is None:
        return
    for line in ed.text.splitlines():
        if line.startswith((f"| `{n.new}` |", f"| `{n.old}` |")):
            head, _, _ = line.rstrip(" |").rpartition("|")
            want = f"{head}| {default} |"
            if line != want:
                ed.replace(line, want)
