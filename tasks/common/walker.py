"""The file walker every shipped check tool (`tools/check_*.py`) uses, written once.

It is stamped into each family's tool template at `@SOURCES@` when the repository is built
(`shipped`), not shipped as a module of its own: the tools put the tree's root first on
sys.path to import the code under test, so a `tools/`-side helper imported by name could be
shadowed by a file the agent writes at the root. Stamped in, it is part of the protected tool
itself. The tool defines `ROOT` (the repository) and `SKIP` (top-level directories not walked).

Beside the walker, `FACTS`: what a tool needs to know about the code rather than of its
behaviour (a function's parameters, a dataclass's fields, a name defined or gone, the order of a
tuple of hooks) read from the source with `ast` (issue 42, item 3). Under the harness every
module of the agent's is a proxy answered by the agent's own process (docs/threat_model.md), so
`fn.__code__`, `__dataclass_fields__`, `__name__`, `hasattr` or `isinstance` asked of it are
answers the code under test chooses: an object whose `__code__` says "(url, policy)" while the
function keeps its legacy form passed `check_api final`. The source is data the check reads.
"""

from __future__ import annotations

from tasks.common.build import fill_template

SOURCES = '''def sources(paths, suffixes=(".py",)):
    """The files under `paths` (repo-relative) ending in `suffixes`, in sorted order; directories
    in SKIP, hidden (`.`) or private (`_`, e.g. __pycache__) are not walked."""
    for p in paths:
        full = ROOT / p
        if full.is_file():
            yield full
            continue
        for dirpath, dirnames, filenames in os.walk(full):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP and not d.startswith((".", "_")))
            yield from (Path(dirpath) / f for f in sorted(filenames) if f.endswith(suffixes))


def module_statements(rel):
    """The statements of a file of the tree that run at import (into if/try/with/for/while
    blocks, not into functions or classes); none if it is missing or does not parse."""
    path = ROOT / rel
    try:
        todo = list(ast.parse(path.read_text(), rel).body) if path.is_file() else []
    except SyntaxError:
        return []
    out = []
    while todo:
        node = todo.pop(0)
        out.append(node)
        for block in ("body", "orelse", "finalbody", "handlers"):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                todo += getattr(node, block, None) or []
    return out


def binds(node):
    """The names a module-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return [n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)]


def bindings(rel, name):
    """Every module-level statement of `rel` that binds `name`. A module `__getattr__`, or a
    write to `globals()`, binds any name."""
    out = []
    for node in module_statements(rel):
        if name in binds(node) or "__getattr__" in binds(node) or "globals()" in ast.unparse(node):
            out.append(node)
    return out


def function(rel, name):
    """The plain module-level `def name` of `rel` when nothing else binds the name there
    (no decorator, no later assignment or import), else None."""
    found = bindings(rel, name)
    ok = len(found) == 1 and isinstance(found[0], ast.FunctionDef) and not found[0].decorator_list
    return found[0] if ok else None


def params(fdef):
    """(positional-or-keyword count, every parameter's count) of a def, or None."""
    if fdef is None:
        return None
    a = fdef.args
    return len(a.args), len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)


def assigned(rel, name):
    """The value of the one module-level `name = ...` of `rel` (an ast node), or None."""
    found = bindings(rel, name)
    return found[0].value if len(found) == 1 and isinstance(found[0], ast.Assign) else None


def dataclass_fields(rel, cls):
    """The fields, in order, of the one dataclass `cls` of `rel` (decorated with dataclass), or None."""
    found = bindings(rel, cls)
    if len(found) != 1 or not isinstance(found[0], ast.ClassDef):
        return None
    node = found[0]
    if not any("dataclass" in ast.unparse(d) for d in node.decorator_list):
        return None
    return [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            and "ClassVar" not in ast.unparse(s.annotation)]'''


def shipped(template: str, subs: dict[str, str]) -> str:
    """A shipped tool's text: the walker at `@SOURCES@`, then the family's own @NAME@ fields."""
    if "@SOURCES@" not in template:
        raise ValueError("a shipped check tool's template must hold @SOURCES@ (tasks/common/walker.py)")
    return fill_template(template.replace("@SOURCES@", SOURCES), subs)
