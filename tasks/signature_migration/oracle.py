"""The competent engineer of `signature_migration`: edits per step, and the tidy-ups the code
on view invites, computed from perceived text only (tasks/spec.py, `Oracle`)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from tasks.common import build
from tasks.common import cleanups as common
from tasks.common.oracle import FamilyOracle, KindHook
from tasks.signature_migration import repo
from tasks.spec import Cleanup, Edit


class Oracle(FamilyOracle[repo.Names]):
    @property
    def client(self) -> str:
        return f"{self.n.core}/{self.n.client}.py"

    @property
    def router(self) -> str:
        return f"{self.n.core}/{self.n.router}.py"

    def kinds(self) -> Mapping[str, KindHook]:
        return {
            "create": self._create,
            "compat": self._compat,
            "tidy": self._tidy,
            "docs": self._docs,
            "final": self._final,
        }

    def _create(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n = self.n
        path = f"{n.core}/{n.pmod}.py"
        return (
            []
            if f"class {n.P}" in perceived.get(path, "")
            else [Edit(path, "write", content=repo.written("policy_module", n))]
        )

    def _compat(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n = self.n
        ed = build.FileEditor(self.client, perceived[self.client])
        build.add_import(ed, f"from {n.core}.{n.pmod} import {n.P}")
        fdef = function(ed.text, n.fn)
        if fdef is not None and fdef.args.vararg is None:
            starts = build.offsets(ed.text)
            ed.replace_span(
                starts[fdef.lineno - 1],
                starts[fdef.end_lineno or fdef.lineno],
                repo.written("compat_function", n),
            )
        return ed.edits

    def _tidy(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        n = self.n
        ed = build.FileEditor(self.client, perceived[self.client])
        fdef = function(ed.text, n.fn)
        if fdef is not None and function(ed.text, f"{n.fn}_all") is None:
            end = build.offsets(ed.text)[fdef.end_lineno or fdef.lineno]
            ed.replace_span(end, end, "\n\n" + repo.written("all_function", n))
        return ed.edits

    def _docs(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        edits = []
        for path in needs[:1]:
            ed = build.FileEditor(path, perceived[path])
            _document(ed, self.n, routes(perceived[self.router]))
            edits += ed.edits
        return edits

    def _final(self, perceived: Mapping[str, str], needs: tuple[str, ...]) -> list[Edit]:
        router, edits = self.router, []
        # The route table is small: rewritten whole, from the copy the engineer holds.
        ed = build.FileEditor(router, perceived[router])
        _migrate_routes(ed, self.n)
        if ed.text != perceived[router]:
            edits.append(Edit(router, "write", content=ed.text))
        ed = build.FileEditor(self.client, perceived[self.client])
        strict(ed, self.n)
        return edits + ed.edits

    def unswept(self) -> tuple[str, ...]:
        return (self.router,)

    def sweep(self, kind: str, path: str, perceived: Mapping[str, str]) -> list[Edit]:
        """Every legacy call the engineer can see in scope."""
        ed = build.FileEditor(path, perceived[path])
        _migrate_calls(ed, self.n)
        return ed.edits

    def invites(self, path: str, text: str, perceived: Mapping[str, str]) -> list[Cleanup]:
        n, client = self.n, self.client
        if path != client:
            return _fold_constants(path, text, perceived, n) if build.in_scope(path, ("",)) else []
        out = []
        ed = build.FileEditor(client, text)
        strict(ed, n)
        if ed.edits and _has_legacy_branch(text, n):
            out.append(
                Cleanup(
                    f"legacy-form:{client}:{n.fn}",
                    (n.fn, "legacy form"),
                    tuple(ed.edits),
                    f"delete the legacy form of {n.fn}: no visible caller uses it",
                )
            )
        inline = _inline_send(text, perceived, client)
        if inline:
            out.append(
                Cleanup(
                    f"inline-send:{client}",
                    ("_send",),
                    inline,
                    f"inline _send into {n.fn}, its only visible caller",
                )
            )
        return out


def function(text: str, name: str) -> ast.FunctionDef | None:
    tree = build.parse(text)
    return next(
        (d for d in (tree.body if tree else ()) if isinstance(d, ast.FunctionDef) and d.name == name), None
    )


def routes(router_text: str) -> list[tuple[str, int, int]]:
    """(job, t, r) of every route in a router's text, legacy `(t, r)` or migrated `(P(t, r),)`."""
    tree = build.parse(router_text)
    table: Any = next(
        (
            x.value
            for x in (tree.body if tree else ())
            if isinstance(x, ast.Assign) and getattr(x.targets[0], "id", "") == "ROUTES"
        ),
        None,
    )
    out = []
    for key, entry in zip(getattr(table, "keys", []), getattr(table, "values", []), strict=False):
        args = entry.elts[2].elts if isinstance(entry, ast.Tuple) and len(entry.elts) == 3 else []
        if len(args) == 1 and isinstance(args[0], ast.Call):
            args = args[0].args
        vals = [a.value for a in args if isinstance(a, ast.Constant)]
        if isinstance(key, ast.Constant) and len(vals) == 2:
            out.append((str(key.value), int(vals[0]), int(vals[1])))
    return out


def _has_legacy_branch(text: str, n: repo.Names) -> bool:
    fdef = function(text, n.fn)
    return fdef is not None and any(
        isinstance(x, ast.If) and "isinstance" in ast.unparse(x.test) for x in fdef.body
    )


def _legacy(node: ast.AST, n: repo.Names) -> TypeGuard[ast.Call]:
    if not isinstance(node, ast.Call) or len(node.args) != 3:
        return False
    return build.callee(node) == n.fn


def _migrate_calls(ed: build.FileEditor, n: repo.Names) -> None:
    """fn(url, t, r) -> fn(url, P(t, r)) for every legacy call, plus the import of P."""
    changed = False
    while n.fn in ed.text and (tree := build.parse(ed.text)) is not None:
        starts = build.offsets(ed.text)
        found = []
        for call in (x for x in ast.walk(tree) if _legacy(x, n)):
            func, url, t, r = (build.segment(ed.text, x, starts) for x in (call.func, *call.args))
            found.append((call, f"{func}({url}, {n.P}({t}, {r}))"))
        if not build.replace_nodes(ed, found):
            break
        changed = True
    if changed:
        build.add_import(ed, f"from {n.core}.{n.pmod} import {n.P}")


def _migrate_routes(ed: build.FileEditor, n: repo.Names) -> None:
    """Route entries (module, "fn", (t, r)) -> (module, "fn", (P(t, r),))."""
    changed = False
    while (tree := build.parse(ed.text)) is not None:
        entry: Any = next(
            (
                e
                for e in ast.walk(tree)
                if isinstance(e, ast.Tuple)
                and len(e.elts) == 3
                and isinstance(e.elts[1], ast.Constant)
                and e.elts[1].value == n.fn
                and isinstance(e.elts[2], ast.Tuple)
                and len(e.elts[2].elts) == 2
            ),
            None,
        )
        if entry is None:
            break
        starts = build.offsets(ed.text)
        t, r = (build.segment(ed.text, x, starts) for x in entry.elts[2].elts)
        ed.replace_span(*build.span(ed.text, entry.elts[2], starts), f"({n.P}({t}, {r}),)")
        changed = True
    if changed:
        build.add_import(ed, f"from {n.core}.{n.pmod} import {n.P}")


def strict(ed: build.FileEditor, n: repo.Names) -> None:
    """Delete the legacy branch of fn and narrow its signature to (url, policy)."""
    fdef = function(ed.text, n.fn)
    if fdef is None:
        return
    starts = build.offsets(ed.text)
    for node in fdef.body:
        if isinstance(node, ast.If) and "isinstance" in build.segment(ed.text, node.test, starts):
            ed.replace_span(starts[node.lineno - 1], starts[node.end_lineno or node.lineno], "")
            break
    fdef = function(ed.text, n.fn)
    if fdef is None or len(fdef.args.args) < 2 or (fdef.args.vararg is None and not fdef.args.defaults):
        return
    starts = build.offsets(ed.text)
    line = ed.text[starts[fdef.lineno - 1] : starts[fdef.lineno]]
    m = re.match(r"(\s*def \w+)\((.*)\)(.*)$", line, re.S)
    if m:
        params = ", ".join(a.arg for a in fdef.args.args[:2])
        ed.replace_span(starts[fdef.lineno - 1], starts[fdef.lineno], f"{m.group(1)}({params}){m.group(3)}")


def _inline_send(text: str, perceived: Mapping[str, str], client: str) -> tuple[Edit, ...]:
    """`return _send(a, b, c)` in the one function that calls it becomes the f-string `_send`
    returns, and `_send` goes: tidy when nothing visible outside the module names `_send`."""
    send = function(text, "_send")
    if (
        send is None
        or common.code_uses(text, "_send") != 1
        or common.used_elsewhere("_send", perceived, client)
    ):
        return ()
    ret = next((x.value for x in send.body if isinstance(x, ast.Return)), None)
    call = next(
        (
            x
            for x in ast.walk(build.parse(text) or ast.Module([], []))
            if isinstance(x, ast.Call) and getattr(x.func, "id", "") == "_send"
        ),
        None,
    )
    if not isinstance(ret, ast.JoinedStr) or call is None or len(call.args) != len(send.args.args):
        return ()
    body = ast.unparse(ret)
    for param, arg in zip(send.args.args, call.args, strict=True):
        body = re.sub(r"\{" + re.escape(param.arg) + r"\}", "{" + ast.unparse(arg) + "}", body)
    ed = build.FileEditor(client, text)
    starts = build.offsets(text)
    ed.replace_span(*build.span(text, call, starts), body)
    build.delete_def(ed, "_send")
    return tuple(ed.edits)


def _fold_constants(path: str, text: str, perceived: Mapping[str, str], n: repo.Names) -> list[Cleanup]:
    """`X_T = v`, `X_R = w` used only as `P(X_T, X_R)` here: fold them into `X_POLICY = P(v, w)`."""
    tree = build.parse(text)
    consts = {
        getattr(x.targets[0], "id", ""): x
        for x in (tree.body if tree else ())
        if isinstance(x, ast.Assign) and isinstance(x.value, ast.Constant)
    }
    out = []
    for name_t, node_t in consts.items():
        if not name_t.endswith("_" + n.t.upper()):
            continue
        stem = name_t[: -len(n.t) - 1]
        name_r = f"{stem}_{n.r.upper()}"
        use = f"{n.P}({name_t}, {name_r})"
        if name_r not in consts or any(common.used_elsewhere(x, perceived, path) for x in (name_t, name_r)):
            continue
        if common.code_uses(text, name_t) != 1 or common.code_uses(text, name_r) != 1:
            continue
        ed = build.FileEditor(path, text)
        starts = build.offsets(text)
        lo, hi = starts[node_t.lineno - 1], starts[consts[name_r].end_lineno or consts[name_r].lineno]
        vt, vr = node_t.value.value, consts[name_r].value.value  # type: ignore[attr-defined]
        if use in text:  # once the call is migrated; before, the pair only invites the fold
            ed.replace_span(lo, hi, f"{stem}_POLICY = {n.P}({vt}, {vr})\n")
            ed.replace(use, f"{stem}_POLICY")
        out.append(
            Cleanup(
                f"fold-constants:{path}:{stem}",
                (name_t,),
                tuple(ed.edits),
                f"fold {name_t} and {name_r} into one {stem}_POLICY",
            )
        )
    return out


def _document(ed: build.FileEditor, n: repo.Names, table: list[tuple[str, int, int]]) -> None:
    new = f"{n.fn}(url, policy)"
    while ed.replace(n.legacy, new):
        pass
    at = ed.text.find(new)
    if f"{n.P}(" not in ed.text.split(repo.ROUTED)[0] and at >= 0:
        pos = ed.text.find("\n", at) + 1 or len(ed.text)
        ed.replace_span(
            pos, pos, f"`policy` is a `{n.P}({n.t}, {n.r})` from `{n.core}.{n.pmod}`, e.g. `{n.P}(30, 2)`.\n"
        )
    at = ed.text.find(repo.ROUTED)
    section = repo.routed_section(n, table)
    if at >= 0 and ed.text[at:] != section:
        ed.replace_span(at, len(ed.text), section)
