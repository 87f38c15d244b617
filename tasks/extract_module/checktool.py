"""The project's own check tool, shipped read-only in every generated repository of
`extract_module` (tools/check_imports.py).

A template with @NAME@ placeholders (no brace escaping) filled from the task's names. Every
problem it finds prints as `path:line: reason`: the simulated model re-reads the files a
failing check names, so the path is what makes a failure actionable.
"""

from __future__ import annotations

from tasks.common import walker
from tasks.extract_module import repo as ext

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


@SOURCES@


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
        # where it is defined is read from the source (FACTS): `__module__` is what its process says
        if fn is None or function(f"{APP}/{GRP}/{GMOD}.py", name) is None:
            out.append(f"{APP}/{GRP}/{GMOD}.py:1: {name} must be defined here and exported by {APP}.{GRP}")
        elif [fn(s) for s in SAMPLES] != GROUP[name]:
            out.append(f"{APP}/{GRP}/{GMOD}.py:1: {name} behaves differently from the original")
    return doubt(f"{APP}/{GRP}/{GMOD}.py") + out + nocycle() + renamed([f"{APP}/{GRP}"])


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
    out = doubt(UTIL_PY) + [f"{UTIL_PY}:1: {name} is still available from {APP}.{UTIL}; delete the re-export"
           for name in GROUP if bindings(UTIL_PY, name) or hasattr(importlib.import_module(f"{APP}.{UTIL}"), name)]
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
    subs = {
        "APP": n.app,
        "UTIL": n.util,
        "GRP": n.grp,
        "GMOD": n.gmod,
        "PLUGINS": n.plugins,
        "HELPERS": n.helpers,
        "GROUP": repr(group),
        "SAMPLES": repr(ext.SAMPLES),
    }
    return walker.shipped(_EXTRACT_TOOL, subs)
