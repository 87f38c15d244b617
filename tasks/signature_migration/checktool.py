"""The project's own check tool, shipped read-only in every generated repository of
`signature_migration` (tools/check_api.py).

A template with @NAME@ placeholders (no brace escaping) filled from the task's names. Every
problem it finds prints as `path:line: reason`: the simulated model re-reads the files a
failing check names, so the path is what makes a failure actionable.
"""

from __future__ import annotations

from tasks.common import walker
from tasks.signature_migration import repo as sig

# The project's own check tool, shipped read-only. Placeholders are @NAME@ so the template
# needs no brace escaping.
_SIG_TOOL = '''"""Checks for the @FN@ migration (shipped with the task; read-only).

    python3 -B tools/check_api.py policy | compat | send | migrated PATH... | all | docs PATH | final

Each problem prints as `path:line: reason`; the exit code is 1 if there is any.
"""

import ast
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FN, T, R, P = "@FN@", "@T@", "@R@", "@P@"
CLIENT, PMOD, ROUTER = "@CORE@/@CLIENT@.py", "@CORE@/@PMOD@.py", "@CORE@/@ROUTER@.py"
SKIP = {"tests", "tools", "docs", "fixtures"}


@SOURCES@


def legacy_calls(paths):
    out = []
    for path in sources(paths):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Call) and len(node.args) == 3:
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name == FN:
                    out.append(f"{rel}:{node.lineno}: legacy call {FN}(url, {T}, {R}); pass a {P} instead")
    return out


def policy():
    names = dataclass_fields(PMOD, P)
    return [] if names == [T, R] else doubt(PMOD) or [f"{PMOD}:1: {P} must be a dataclass with fields {[T, R]}; it has {names}"]


def compat():
    from @CORE@.@CLIENT@ import @FN@
    from @CORE@.@PMOD@ import @P@
    want = "@SENT@"
    got = [@FN@("u", @P@(3, 4)), @FN@("u", 3, 4)]
    return [] if got == [want, want] else [f"{CLIENT}:1: {FN} must accept both forms; got {got}"]


def all_():
    from @CORE@.@CLIENT@ import @FN@
    from @CORE@.@PMOD@ import @P@
    many = getattr(sys.modules["@CORE@.@CLIENT@"], FN + "_all", None)
    if many is None:
        return [f"{CLIENT}:1: no {FN}_all(urls, policy)"]
    p = @P@(1, 2)
    ok = many(["a", "b"], p) == [@FN@("a", p), @FN@("b", p)]
    return [] if ok else [f"{CLIENT}:1: {FN}_all must return [{FN}(url, policy) for url in urls]"]


def send():
    found = params(function(CLIENT, "_send"))
    if found is None or found[1] != 3:
        return doubt(CLIENT) or [f"{CLIENT}:1: _send(url, {T}, {R}) must stay a module-level function"]
    return []


def routes():
    """(job, t, r) for every route, whether its arguments are legacy or a @P@."""
    from @CORE@ import @ROUTER@
    out = []
    for name, (_module, _attr, args) in @ROUTER@.ROUTES.items():
        values = (getattr(args[0], T), getattr(args[0], R)) if len(args) == 1 else tuple(args)
        out.append((name, *values))
    return out


def docs(paths):
    out = []
    for p in paths:
        text = (ROOT / p).read_text()
        lines = text.splitlines()
        out += [f"{p}:{i}: still documents the legacy form {FN}(url, {T}, {R})"
                for i, line in enumerate(lines, 1) if f"{FN}(url, {T}, {R})" in line]
        if P + "(" not in text:
            out.append(f"{p}:1: does not show how to build a {P}(...)")
        for name, t, r in routes():
            want = f"- `{name}`: {P}({t}, {r})"
            if want not in lines:
                seen = next((i for i, line in enumerate(lines, 1) if line.startswith(f"- `{name}`:")), None)
                where = f"{p}:{seen}: documents route {name!r} differently" if seen else \
                    f"{p}:1: does not document route {name!r}"
                out.append(f"{where}; {ROUTER} runs it with ({t}, {r}): write `{want[2:]}`")
    return out


def final():
    """Facts about the code, read from its source (tasks/common/walker.py, FACTS)."""
    out = doubt(CLIENT, ROUTER)
    if params(function(CLIENT, FN)) != (2, 2):
        out.append(f"{CLIENT}:1: {FN} must be a plain function taking exactly (url, policy): the legacy form is removed")
    table = assigned(ROUTER, "ROUTES")
    for key, entry in zip(getattr(table, "keys", []), getattr(table, "values", [])):
        elts = getattr(entry, "elts", [])
        if len(elts) == 3 and getattr(elts[1], "value", None) == FN:
            args = getattr(elts[2], "elts", [])
            if not (len(args) == 1 and isinstance(args[0], ast.Call) and getattr(args[0].func, "id", None) == P):
                out.append(f"{ROUTER}:1: route {getattr(key, 'value', key)!r} still passes legacy arguments "
                           f"{ast.unparse(elts[2])}; pass a {P}(...)")
    if not isinstance(table, ast.Dict):
        out.append(f"{ROUTER}:1: ROUTES must stay one dict literal")
    return out + legacy_calls(["."])


def main(argv):
    cmd, rest = argv[0], argv[1:]
    problems = {"policy": policy, "compat": compat, "send": send, "all": all_, "final": final}.get(cmd)
    if problems is None and cmd not in ("migrated", "docs"):
        raise SystemExit(f"unknown check {cmd!r}")
    problems = problems() if problems else legacy_calls(rest) if cmd == "migrated" else docs(rest)
    print("\\n".join(problems) or f"ok: {cmd}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def sig_tool(n: sig.Names) -> str:
    subs = {
        "FN": n.fn,
        "T": n.t,
        "R": n.r,
        "P": n.P,
        "CORE": n.core,
        "CLIENT": n.client,
        "PMOD": n.pmod,
        "ROUTER": n.router,
        "SENT": sig.sent(n, "u", 3, 4),
    }
    return walker.shipped(_SIG_TOOL, subs)
