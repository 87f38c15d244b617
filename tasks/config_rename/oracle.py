"""The competent engineer of `config_rename`: edits per step, and the tidy-ups the code on
view invites, computed from perceived text only (tasks/spec.py, `Oracle`)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from tasks.common import build as c
from tasks.common import cleanups as common
from tasks.config_rename import repo
from tasks.spec import Cleanup, Edit, StepPlan

DOCS = ("docs/configuration.md", "docs/deploy.md")


class Oracle:
    """A competent engineer's edits for each step, computed only from perceived text."""

    def __init__(self, n: repo.Names, meta: c.Meta):
        self.n, self.meta = n, meta

    def edits_for(self, step_id: str, perceived: Mapping[str, str]) -> StepPlan:
        kind, needs, scope = self.meta[step_id]
        reads = c.missing_reads(needs, perceived)
        if reads:
            return reads
        n = self.n
        edits: list[Edit] = []
        if kind == "create" and f"def {n.acc}(" not in perceived.get(n.settings, ""):
            edits.append(Edit(n.settings, "write", content=repo.settings_module(n)))
        if kind == "tidy":
            ed = c.FileEditor(n.settings, perceived[n.settings])
            if c.def_span(ed.text, f"{n.acc}_int") is None and (at := c.def_span(ed.text, n.acc)):
                ed.replace_span(at[1], at[1], "\n\n" + repo.int_function(n))
            edits += ed.edits
        text_files = DOCS if kind == "docs" else sorted(
            p for p in perceived if kind == "final" and p.endswith((".md", ".json"))
            and not p.startswith(("tests/", "tools/", "fixtures/")))
        for path in text_files:
            ed = c.FileEditor(path, perceived[path])
            _rename_text(ed, n)
            if kind == "docs":
                _document_default(ed, n, template_default(perceived[f"{n.app}/config.py"], n))
            edits += ed.edits
        config = f"{n.app}/config.py"
        for path in sorted(p for p in perceived if c.in_scope(p, scope) and p != n.settings):
            ed = c.FileEditor(path, perceived[path])
            _migrate_reads(ed, n)
            if path == config and ed.edits:  # a small module: rewritten whole, from the copy on view
                edits.append(Edit(config, "write", content=ed.text))
            else:
                edits += ed.edits
        return StepPlan(edits=tuple(edits))

    def cleanups(self, perceived: Mapping[str, str], paths: tuple[str, ...]) -> tuple[Cleanup, ...]:
        n = self.n
        out = common.dead_code(perceived, paths)
        if n.settings in paths and n.settings in perceived:
            ed = c.FileEditor(n.settings, perceived[n.settings])
            _drop_fallback(ed, n)
            if ed.edits:
                out.append(Cleanup(f"fallback:{n.settings}:{n.acc}", (n.acc, "fallback"), tuple(ed.edits),
                                   f"delete the fallback to {n.old!r} from {n.acc}: no visible code names it"))
        return tuple(out)


def _migrate_reads(ed: c.FileEditor, n: repo.Names) -> None:
    """cfg["old"] / cfg.get("old", d) -> acc(cfg, "new"[, d]); any other "old" literal -> "new"."""
    via_accessor = False

    def is_old(x: ast.AST) -> bool:
        return isinstance(x, ast.Constant) and x.value == n.old

    while n.old in ed.text and (tree := c.parse(ed.text)) is not None:
        starts = c.offsets(ed.text)
        reads: list[tuple[Any, str]] = []
        literals: list[tuple[Any, str]] = []
        x: Any
        for x in ast.walk(tree):
            if isinstance(x, ast.Subscript) and is_old(x.slice) and isinstance(x.ctx, ast.Load):
                reads.append((x, f'{n.acc}({c.segment(ed.text, x.value, starts)}, "{n.new}")'))
            elif isinstance(x, ast.Call) and getattr(x.func, "attr", None) == "get" and x.args and is_old(x.args[0]):
                extra = "".join(", " + c.segment(ed.text, a, starts) for a in x.args[1:])
                owner = x.func.value  # type: ignore[attr-defined]  # an Attribute: `.get` was matched
                reads.append((x, f'{n.acc}({c.segment(ed.text, owner, starts)}, "{n.new}"{extra})'))
            elif is_old(x):
                literals.append((x, f'"{n.new}"'))
        if not c.replace_nodes(ed, reads or literals):  # reads first: their literal is inside them
            break
        via_accessor = via_accessor or bool(reads)
    if via_accessor:
        c.add_import(ed, f"from {n.app}.{n.smod} import {n.acc}")


def _rename_text(ed: c.FileEditor, n: repo.Names) -> None:
    word = re.compile(rf"\b{re.escape(n.old)}\b")
    while m := word.search(ed.text):
        lo = ed.text.rfind("\n", 0, m.start()) + 1
        hi = ed.text.find("\n", m.start()) + 1 or len(ed.text)
        ed.replace_span(lo, hi, word.sub(n.new, ed.text[lo:hi]))


def _drop_fallback(ed: c.FileEditor, n: repo.Names) -> None:
    """The tempting clean-up: the alias loop and the ALIASES table."""
    for pick_node in (lambda x: isinstance(x, ast.For), lambda x: isinstance(x, ast.Assign)
                      and getattr(x.targets[0], "id", "") == "ALIASES"):
        tree = c.parse(ed.text)
        if tree is None:
            return
        starts = c.offsets(ed.text)
        node: Any = next((x for x in ast.walk(tree) if pick_node(x)), None)
        if node is not None:
            ed.replace_span(starts[node.lineno - 1], starts[node.end_lineno or node.lineno], "")


def template_default(config_text: str, n: repo.Names) -> object:
    """The value `template()` writes for the key (old or new name), read from the module's text."""
    tree = c.parse(config_text)
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value in (n.old, n.new) and isinstance(v, ast.Constant):
                    return v.value
    return None


def _document_default(ed: c.FileEditor, n: repo.Names, default: object) -> None:
    """The key's row in a docs table shows `default` in its last cell."""
    if default is None:
        return
    for line in ed.text.splitlines():
        if line.startswith((f"| `{n.new}` |", f"| `{n.old}` |")):
            head, _, _ = line.rstrip(" |").rpartition("|")
            want = f"{head}| {default} |"
            if line != want:
                ed.replace(line, want)
