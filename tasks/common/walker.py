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

SOURCES = '''import ast  # FACTS below reads the tree with it; stamped whole, the block needs nothing else


def sources(paths, suffixes=(".py",)):
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


# FACTS. A fact about a module is certain only when the module's source says it and nothing
# else can: read from an unconditional top-level definition, in a module whose top level holds
# only the statements below (an allow-list), and whose text nowhere reaches for a way to bind
# or rebind names at run time. Anything else makes every fact about the module unknown, and an
# unknown fact fails the check that needs it, with the construct named (`doubt`).
PLAIN = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
# The spellings of "bind a name elsewhere" (builtins, modules, frame and object internals). Any
# of them as a name, an attribute, an imported name or module, or a string, anywhere in the module.
DYNAMIC = frozenset({
    "exec", "eval", "compile", "setattr", "delattr", "vars", "globals", "locals", "__import__",
    "builtins", "importlib", "inspect", "gc", "ctypes", "pickle", "marshal", "copyreg", "runpy", "sys", "modules", "_getframe", "f_globals", "f_locals", "f_back", "attrgetter",
})
# Dunder names a module may use; every other (`__dict__`, `__getattr__`, `__globals__`, `__code__`,
# `__class__`, `__self__`, `__builtins__`, ...) opens the objects' internals.
DUNDERS = frozenset({"__name__", "__init__", "__all__", "__doc__", "__file__", "__future__", "__main__",
                     "__post_init__", "__repr__", "__str__", "__eq__", "__hash__", "__len__", "__iter__"})


def _lookups(tree):
    """The nodes of the one run-time lookup a module may hold, `getattr(importlib.import_module(m), a)`
    (a registry of handlers), where `m` and `a` are unpacked in that function from a subscript of a
    top-level dict literal of constants: what it can reach is then written in the source, and those
    constants are scanned like any other word. Anything else spelt with `importlib` is dynamic."""
    tables = {t.id for s in tree.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Dict)
              and all(isinstance(n, (ast.Constant, ast.Tuple, ast.Call, ast.Name, ast.Load, ast.Dict))
                      for n in ast.walk(s.value)) for t in s.targets if isinstance(t, ast.Name)}
    # a table is only ever read by subscript: nothing may put a computed entry in it
    reads = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)}
    tables -= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
               and id(n) not in reads}
    ok = set()
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        stores = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                stores.setdefault(n.id, []).append(n)
        unpacked = set()
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Tuple):
                value = n.value.func.value if isinstance(n.value, ast.Call) and getattr(n.value.func, "attr", "") \
                    == "partition" and isinstance(n.value.func, ast.Attribute) else n.value
                if isinstance(value, ast.Subscript) and getattr(value.value, "id", None) in tables:
                    unpacked |= {e.id for e in n.targets[0].elts if isinstance(e, ast.Name) and len(stores[e.id]) == 1}
        for n in ast.walk(fn):
            inner = n.args[0] if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "getattr" \
                and len(n.args) == 2 and isinstance(n.args[0], ast.Call) else None
            if inner is not None and isinstance(inner.func, ast.Attribute) and inner.func.attr == "import_module" \
                    and getattr(inner.func.value, "id", None) == "importlib" and len(inner.args) == 1 \
                    and all(getattr(a, "id", None) in unpacked for a in (inner.args[0], n.args[1])):
                ok |= {n, inner.func.value}
    imports = [s for s in tree.body if isinstance(s, ast.Import) and [a.name for a in s.names] == ["importlib"]
               and not s.names[0].asname]
    return ok | set(imports) if ok else set()


def _dynamic(tree):
    """(line, construct) of the first thing in `tree` that can bind names at run time, or None."""
    lookups = _lookups(tree)
    for node in ast.walk(tree):
        words = []
        if node in lookups:
            continue
        if isinstance(node, ast.ImportFrom):
            if any(a.name == "*" for a in node.names):
                return node.lineno, f"from {node.module} import *"
            words = (node.module or "").split(".") + [w for a in node.names for w in (a.name, a.asname) if w]
        elif isinstance(node, ast.Import):
            words = [w for a in node.names for w in a.name.split(".") + [a.asname] if w]
        elif isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute):
            words = [node.attr]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words = [node.value] + (node.value.replace(":", ".").split(".") if node.value.isprintable()
                                    and " " not in node.value else [])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            words = [node.name]
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            return node.lineno, "global " + ", ".join(node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" and len(node.args) > 1 \
                and not isinstance(node.args[1], ast.Constant):
            return node.lineno, "getattr with a computed name"
        for w in words:
            if w in DYNAMIC or (w.startswith("__") and w.endswith("__") and w not in DUNDERS):
                return getattr(node, "lineno", 1), w
    return None


def binds(node):
    """The names a top-level statement binds (in any block it holds, not in functions or classes)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [a.asname or a.name.split(".")[0] for a in node.names]
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Name, ast.alias)) and not isinstance(getattr(n, "ctx", ast.Store()), ast.Load):
            out.append(getattr(n, "id", None) or n.asname or n.name.split(".")[0])
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(n.name)
            continue
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.append(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            out.append(n.name)
        todo += ast.iter_child_nodes(n)
    return out


FACTS, TREES = {}, {}


def parsed_source(rel):
    """The ast of a file of the tree, or None if it is missing or does not parse (parsed once)."""
    if rel not in TREES:
        path = ROOT / rel
        try:
            TREES[rel] = ast.parse(path.read_text(), rel) if path.is_file() else None
        except (SyntaxError, ValueError, UnicodeDecodeError):
            TREES[rel] = None
    return TREES[rel]


def _elsewhere(rel, names):
    """Why another module of the tree may bind names of `rel` at run time, or None: it can bind
    any module's names, or it writes an attribute named like one `rel` binds (`client.push = ...`)."""
    for path in sources(["."]):
        other = path.relative_to(ROOT).as_posix()
        tree = parsed_source(other) if other != rel else None
        dynamic = _dynamic(tree) if tree is not None else None
        if dynamic:
            return f"{other}:{dynamic[0]} uses {dynamic[1]}, which can bind names of any module at run time"
        for node in ast.walk(tree) if tree is not None else []:
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and node.attr in names \
                    and getattr(node.value, "id", None) not in ("self", "cls"):
                return f"{other}:{node.lineno} writes an attribute {node.attr}, which may rebind it in {rel}"
    return None


def facts(rel):
    """({name: the top-level statements of `rel` that bind it}, why nothing about `rel` is certain
    or None). A missing or unparsable file is unknown."""
    if rel not in FACTS:
        tree = parsed_source(rel)
        found, why = {}, None if tree is not None else "it is missing or does not parse"
        dynamic = _dynamic(tree) if tree is not None else None
        if dynamic:  # named first: it is the reason, whatever statement holds it
            why = f"line {dynamic[0]} uses {dynamic[1]}, which can bind names at run time"
        for node in tree.body if tree is not None else []:
            names = binds(node)
            for name in names:
                found.setdefault(name, []).append(node)
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            plain = isinstance(node, PLAIN) and (not isinstance(node, (ast.Assign, ast.AnnAssign))
                                                 or all(isinstance(t, ast.Name) for t in targets))
            # an `if` or an expression (a docstring, `if __name__ == "__main__": main()`) that binds nothing
            harmless = not names and isinstance(node, (ast.If, ast.Expr))
            if why is None and not (plain or harmless):
                what = f"binds {', '.join(sorted(set(names)))} other than by a plain definition" if names \
                    else f"is a top-level {type(node).__name__.lower()}"
                why = f"line {node.lineno} {what}"
        FACTS[rel] = found, why or _elsewhere(rel, set(found))
    return FACTS[rel]


def doubt(*rels):
    """A problem line for each module of `rels` about which nothing can be read from the source."""
    return [f"{rel}:1: facts about this module are read from its source, and {why}: use plain "
            "unconditional top-level definitions" for rel in rels for why in [facts(rel)[1]] if why]


def bindings(rel, name):
    """Every top-level statement of `rel` that binds `name`; when nothing about `rel` is
    certain, a non-empty list all the same (the name may be bound)."""
    found, why = facts(rel)
    return found.get(name, []) if why is None else [why]


def function(rel, name):
    """The plain unconditional top-level `def name` of `rel` when nothing else binds the name
    there (no decorator, no other binding) and the module is certain, else None."""
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
    """The value of the one top-level `name = ...` of `rel` (an ast node), or None."""
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
