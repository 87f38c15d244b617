"""The projects' own check tools, shipped read-only in the generated repositories of
`signature_migration` (tools/check_api.py) and `extract_module` (tools/check_imports.py);
`config_rename`'s tools/check_keys.py lives with its repository templates.

Each is a template with @NAME@ placeholders (no brace escaping) filled from the task's names.
Every problem a tool finds prints as `path:line: reason`: the simulated model re-reads the
files a failing check names, so the path is what makes a failure actionable.
"""

from __future__ import annotations

from tasks import _extract_repo as ext
from tasks import _sig_repo as sig


def _fill(template: str, subs: dict[str, str]) -> str:
    for key, value in subs.items():
        template = template.replace(f"@{key}@", value)
    return template


# The project's own check tool, shipped read-only. Placeholders are @NAME@ so the template
# needs no brace escaping.
_SIG_TOOL = '''"""Checks for the @FN@ migration (shipped with the task; read-only).

    python3 -B tools/check_api.py policy | compat | migrated PATH... | all | docs PATH | final

Each problem prints as `path:line: reason`; the exit code is 1 if there is any.
"""

import ast
import dataclasses
import inspect
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FN, T, R, P = "@FN@", "@T@", "@R@", "@P@"
CLIENT, PMOD, ROUTER = "@CORE@/@CLIENT@.py", "@CORE@/@PMOD@.py", "@CORE@/@ROUTER@.py"
SKIP = {"tests", "tools", "docs", "fixtures"}


def sources(paths):
    for p in paths:
        full = ROOT / p
        if full.is_file():
            yield full
            continue
        for dirpath, dirnames, filenames in os.walk(full):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP and not d.startswith((".", "_")))
            yield from (Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))


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
    from @CORE@.@PMOD@ import @P@
    names = [f.name for f in dataclasses.fields(@P@)]
    return [] if names == [T, R] else [f"{PMOD}:1: {P} fields are {names}, expected {[T, R]}"]


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


def docs(paths):
    out = []
    for p in paths:
        text = (ROOT / p).read_text()
        out += [f"{p}:{i}: still documents the legacy form {FN}(url, {T}, {R})"
                for i, line in enumerate(text.splitlines(), 1) if f"{FN}(url, {T}, {R})" in line]
        if P + "(" not in text:
            out.append(f"{p}:1: does not show how to build a {P}(...)")
    return out


def final():
    from @CORE@ import @CLIENT@, @ROUTER@
    from @CORE@.@PMOD@ import @P@
    params = inspect.signature(getattr(@CLIENT@, FN)).parameters.values()
    out = []
    if [p.kind for p in params] != [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 2:
        out.append(f"{CLIENT}:1: {FN} must take exactly (url, policy): the legacy form is removed")
    for name, (_module, attr, args) in @ROUTER@.ROUTES.items():
        if attr == FN and not (len(args) == 1 and isinstance(args[0], @P@)):
            out.append(f"{ROUTER}:1: route {name!r} still passes legacy arguments {args!r}")
    return out + legacy_calls(["."])


def main(argv):
    cmd, rest = argv[0], argv[1:]
    problems = {"policy": policy, "compat": compat, "all": all_, "final": final}.get(cmd)
    if problems is None and cmd not in ("migrated", "docs"):
        raise SystemExit(f"unknown check {cmd!r}")
    problems = problems() if problems else legacy_calls(rest) if cmd == "migrated" else docs(rest)
    print("\\n".join(problems) or f"ok: {cmd}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def sig_tool(n: sig.Names) -> str:
    subs = {"FN": n.fn, "T": n.t, "R": n.r, "P": n.P, "CORE": n.core, "CLIENT": n.client, "PMOD": n.pmod,
            "ROUTER": n.router, "SENT": sig.sent(n, "u", 3, 4)}
    return _fill(_SIG_TOOL, subs)


_EXTRACT_TOOL = '''"""Checks for moving the text helpers out of @APP@.@UTIL@ (shipped with the task; read-only).

    python3 -B tools/check_imports.py package | reexports | shims | migrated PATH... | all |
                                      docs PATH | nocycle | final

Each problem prints as `path:line: reason`; the exit code is 1 if there is any.
"""

import ast
import importlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
APP, UTIL, GRP, GMOD, PLUGINS = "@APP@", "@UTIL@", "@GRP@", "@GMOD@", "@PLUGINS@"
GROUP = @GROUP@
SAMPLES = @SAMPLES@
SKIP = {"tests", "tools", "docs", "fixtures"}
UTIL_PY = f"{APP}/{UTIL}.py"


def sources(paths):
    for p in paths:
        full = ROOT / p
        if full.is_file():
            yield full
            continue
        for dirpath, dirnames, filenames in os.walk(full):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP and not d.startswith((".", "_")))
            yield from (Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))


def parsed(paths):
    for path in sources(paths):
        rel = path.relative_to(ROOT).as_posix()
        yield rel, ast.parse(path.read_text(), rel)


def renamed(paths):
    """Uses of helper names listed in <app>/@HELPERS@.py's RENAMED map."""
    tree = ast.parse((ROOT / APP / "@HELPERS@.py").read_text())
    old = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "RENAMED":
            old = ast.literal_eval(node.value)
    out = []
    for rel, tree in parsed(paths):
        if rel == f"{APP}/@HELPERS@.py":
            continue
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else node.name if isinstance(node, ast.alias) else None
            if name in old:
                out.append(f"{rel}:{node.lineno}: {name} was renamed to {old[name]} in {APP}/@HELPERS@.py")
    return out


def old_imports(paths):
    out = []
    for rel, tree in parsed(paths):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == f"{APP}.{UTIL}" and rel != UTIL_PY:
                out += [f"{rel}:{node.lineno}: imports {a.name} from {APP}.{UTIL}; import it from {APP}.{GRP}"
                        for a in node.names if a.name in GROUP]
    return out


def package():
    grp = importlib.import_module(f"{APP}.{GRP}")
    out = []
    for name in GROUP:
        fn = getattr(grp, name, None)
        if fn is None or fn.__module__ != f"{APP}.{GRP}.{GMOD}":
            out.append(f"{APP}/{GRP}/{GMOD}.py:1: {name} must be defined here and exported by {APP}.{GRP}")
        elif [fn(s) for s in SAMPLES] != GROUP[name]:
            out.append(f"{APP}/{GRP}/{GMOD}.py:1: {name} behaves differently from the original")
    return out + nocycle() + renamed([f"{APP}/{GRP}"])


def reexports():
    util, grp = importlib.import_module(f"{APP}.{UTIL}"), importlib.import_module(f"{APP}.{GRP}")
    return [f"{UTIL_PY}:1: {name} must be re-exported from {APP}.{GRP}, not defined or missing here"
            for name in GROUP if getattr(util, name, None) is not getattr(grp, name, 0)]


def own_functions():
    tree = ast.parse((ROOT / UTIL_PY).read_text())
    return sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_"))


def all_():
    util = importlib.import_module(f"{APP}.{UTIL}")
    got = sorted(getattr(util, "__all__", ["<missing>"]))
    return [] if got == own_functions() else [f"{UTIL_PY}:1: __all__ is {got}, expected {own_functions()}"]


def docs(paths):
    out = []
    for p in paths:
        text = (ROOT / p).read_text() if (ROOT / p).exists() else ""
        out += [f"{p}:1: does not mention {name}" for name in GROUP if name not in text]
        if f"{APP}.{GRP}" not in text:
            out.append(f"{p}:1: does not name the package {APP}.{GRP}")
    return out


def nocycle():
    return [f"{rel}:{node.lineno}: {APP}.{GRP} must not import {APP}.{UTIL} (import cycle)"
            for rel, tree in parsed([f"{APP}/{GRP}"]) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == f"{APP}.{UTIL}"]


def final():
    out = [f"{UTIL_PY}:1: {name} is still available from {APP}.{UTIL}; delete the re-export"
           for name in GROUP if hasattr(importlib.import_module(f"{APP}.{UTIL}"), name)]
    registry = importlib.import_module(f"{APP}.{PLUGINS}").FORMATTERS
    out += [f"{APP}/{PLUGINS}.py:1: formatter {key!r} still points at {target}"
            for key, target in registry.items() if target.split(":")[-1] in GROUP and f".{UTIL}:" in target]
    return out + old_imports(["."]) + renamed(["."]) + nocycle()


def main(argv):
    cmd, rest = argv[0], argv[1:]
    checks = {"package": package, "reexports": reexports, "shims": lambda: reexports() + renamed([f"{APP}/{GRP}", UTIL_PY]),
              "migrated": lambda: old_imports(rest) + renamed(rest), "all": all_, "docs": lambda: docs(rest),
              "nocycle": nocycle, "final": final}
    if cmd not in checks:
        raise SystemExit(f"unknown check {cmd!r}")
    problems = checks[cmd]()
    print("\\n".join(problems) or f"ok: {cmd}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def extract_tool(n: ext.Names) -> str:
    group = {g: [ext.evaluate(n, f"{g}(s)", s=s) for s in ext.SAMPLES] for g in n.group}
    subs = {"APP": n.app, "UTIL": n.util, "GRP": n.grp, "GMOD": n.gmod, "PLUGINS": n.plugins,
            "HELPERS": n.helpers, "GROUP": repr(group), "SAMPLES": repr(ext.SAMPLES)}
    return _fill(_EXTRACT_TOOL, subs)
