"""The competent engineer of `extract_module`: edits per step, and the tidy-ups the code on
view invites, computed from perceived text only (tasks/spec.py, `Oracle`)."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from tasks.common import build
from tasks.common.oracle import FamilyOracle, KindHook
from tasks.extract_module import repo
from tasks.spec import Cleanup, Edit


class Oracle(FamilyOracle[repo.Names]):
    """A competent engineer's edits for each step, computed only from perceived text."""

    def __init__(self, n: repo.Names, meta: build.Meta, last: str):
        super().__init__(n, meta)
        self.last = last

    def kinds(self) -> Mapping[str, KindHook]:
        return {
            "create": self._create,
            "shims": self._shims,
            "tidy": self._tidy,
            "docs": self._docs,
            "final": self._final,
        }

    def _create(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n = self.n
        gdir, gmod = f"{n.app}/{n.grp}", f"{n.app}/{n.grp}/{n.gmod}.py"
        if gmod in perceived:
            return []
        return [
            Edit(gmod, "write", content=_extracted(perceived[n.path(n.util)], n)),
            Edit(f"{gdir}/__init__.py", "write", content=repo.written("package_init", n)),
        ]

    def _shims(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n, util = self.n, self.n.path(self.n.util)
        ed = build.FileEditor(util, perceived[util])
        moved = [g for g in n.group if build.def_span(ed.text, g)]
        for g in moved:
            build.delete_def(ed, g)
        if moved:
            _after_imports(
                ed,
                f"# Re-export shims: moved to {n.app}.{n.grp}; removed at {self.last}.\n"
                f"from {n.app}.{n.grp} import {', '.join(moved)}  # noqa: F401\n",
            )
        return ed.edits

    def _tidy(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        util = self.n.path(self.n.util)
        ed = build.FileEditor(util, perceived[util])
        tree = build.parse(ed.text)
        if tree and not any(
            isinstance(x, ast.Assign) and getattr(x.targets[0], "id", "") == "__all__" for x in tree.body
        ):
            own = sorted(x.name for x in tree.body if isinstance(x, ast.FunctionDef) and x.name[0] != "_")
            _after_imports(ed, f"\n__all__ = {own!r}\n")
        return ed.edits

    def _docs(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n = self.n
        tree = build.parse(perceived[f"{n.app}/{n.grp}/{n.gmod}.py"])
        listed = [
            (d.name, (ast.get_docstring(d) or "").splitlines()[0])
            for d in (tree.body if tree else ())
            if isinstance(d, ast.FunctionDef) and ast.get_docstring(d)
        ]
        return [Edit(f"docs/{n.grp}.md", "write", content=repo.written("group_doc", n, listed))]

    def _final(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n, util, plugins = self.n, self.n.path(self.n.util), self.n.path(self.n.plugins)
        edits = []
        # The registry is small: rewritten whole, from the copy the engineer holds.
        ed = build.FileEditor(plugins, perceived[plugins])
        _retarget(ed, n)
        if ed.text != perceived[plugins]:
            edits.append(Edit(plugins, "write", content=ed.text))
        ed = build.FileEditor(util, perceived[util])
        _drop_shims(ed, n)
        return edits + ed.edits

    def unswept(self) -> tuple[str, ...]:
        return self.n.path(self.n.util), self.n.path(self.n.helpers)

    def sweep(self, kind: str, path: str, perceived: Mapping[str, str]) -> list[Edit]:
        """Imports of moved names (batch and last steps), helpers renamed by a colleague (every step)."""
        ed = build.FileEditor(path, perceived[path])
        if kind in ("batch", "final"):
            _move_imports(ed, self.n)
        _rename(ed, _renamed(perceived.get(self.n.path(self.n.helpers), "")))
        return ed.edits

    def invites(self, path: str, text: str, perceived: Mapping[str, str]) -> list[Cleanup]:
        n, util = self.n, self.n.path(self.n.util)
        if path != util:
            return []
        ed = build.FileEditor(util, text)
        _drop_shims(ed, n)
        return (
            [
                Cleanup(
                    f"reexport-shims:{util}",
                    (util, "re-export"),
                    tuple(ed.edits),
                    f"delete the re-export shims from {util}: no visible module imports them",
                )
            ]
            if ed.edits
            else []
        )


def _extracted(util_text: str, n: repo.Names) -> str:
    """The new module: the group's defs copied verbatim, plus the helper imports they use."""
    spans = [build.def_span(util_text, g) for g in n.group]
    defs = [util_text[a:b].rstrip("\n") + "\n" for a, b in (s for s in spans if s)]
    used = {x.id for d in defs for x in ast.walk(build.parse_source(d)) if isinstance(x, ast.Name)}
    tree = build.parse(util_text)
    imports = [
        f"from {i.module} import {', '.join(a.name for a in i.names if a.name in used)}"
        for i in (tree.body if tree else ())
        if isinstance(i, ast.ImportFrom)
        and i.module != f"{n.app}.{n.grp}"
        and any(a.name in used for a in i.names)
    ]
    return repo.written("extracted", n, imports, defs)


def _after_imports(ed: build.FileEditor, block: str) -> None:
    tree = build.parse(ed.text)
    imports = [x for x in (tree.body if tree else ()) if isinstance(x, ast.Import | ast.ImportFrom)]
    pos = build.offsets(ed.text)[imports[-1].end_lineno or imports[-1].lineno] if imports else 0
    ed.replace_span(pos, pos, block)


def _drop_shims(ed: build.FileEditor, n: repo.Names) -> None:
    tree = build.parse(ed.text)
    starts = build.offsets(ed.text)
    for node in tree.body if tree else ():
        if isinstance(node, ast.ImportFrom) and node.module == f"{n.app}.{n.grp}":
            lo, hi = starts[node.lineno - 1], starts[node.end_lineno or node.lineno]
            prev = ed.text.rfind("\n", 0, lo - 1) + 1
            if ed.text[prev:lo].startswith("# Re-export"):
                lo = prev
            ed.replace_span(lo, hi, "")
            return


def _retarget(ed: build.FileEditor, n: repo.Names) -> None:
    """Registry strings "<app>.<util>:<moved>" -> "<app>.<grp>:<moved>"."""
    old = f"{n.app}.{n.util}:"
    while (tree := build.parse(ed.text)) is not None:
        hit: Any = next(
            (
                x
                for x in ast.walk(tree)
                if isinstance(x, ast.Constant)
                and isinstance(x.value, str)
                and x.value.startswith(old)
                and x.value[len(old) :] in n.group
            ),
            None,
        )
        if hit is None:
            return
        ed.replace_span(
            *build.span(ed.text, hit), repr(f"{n.app}.{n.grp}:{hit.value[len(old) :]}").replace("'", '"')
        )


def _move_imports(ed: build.FileEditor, n: repo.Names) -> None:
    """`from <app>.<util> import a, moved` -> the kept names stay, moved ones come from <app>.<grp>."""
    tree = build.parse(ed.text) if f"{n.app}.{n.util}" in ed.text else None
    found = []
    for node in ast.walk(tree) if tree else ():
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == f"{n.app}.{n.util}"
            and any(a.name in n.group for a in node.names)
        ):
            show = [(a.name + (f" as {a.asname}" if a.asname else ""), a.name in n.group) for a in node.names]
            kept = ", ".join(s for s, moved in show if not moved)
            found.append(
                (
                    node,
                    (f"from {n.app}.{n.util} import {kept}\n" if kept else "")
                    + f"from {n.app}.{n.grp} import {', '.join(s for s, moved in show if moved)}",
                )
            )
    build.replace_nodes(ed, found)


def _renamed(helpers_text: str) -> dict[str, str]:
    for node in (build.parse(helpers_text) or ast.Module([], [])).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "RENAMED":
            return ast.literal_eval(node.value)
    return {}


def _rename(ed: build.FileEditor, renamed: dict[str, str]) -> None:
    tree = build.parse(ed.text) if any(old in ed.text for old in renamed) else None
    found = []
    for x in ast.walk(tree) if tree else ():
        name = (
            x.id if isinstance(x, ast.Name) else x.name if isinstance(x, ast.alias) and not x.asname else None
        )
        if name in renamed:
            found.append((x, renamed[name]))
    build.replace_nodes(ed, found)
