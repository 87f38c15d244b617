"""Machinery shared by the task families: size knobs, seeded names, filler code, and edits
computed over *perceived* file text.

Every family renders its repository from jinja2 templates (tasks/common/render.py) with the
names and values drawn here, and builds its oracle's edits from the helpers here. Nothing in this module reads the real repository: an oracle's edits come only from the
text it is handed, so a stale copy yields the stale (failing or clobbering) edit a real
engineer would make.
"""

from __future__ import annotations

import ast
import functools
import random
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tasks.common.render import snippet
from tasks.common.run_tests import RUN_TESTS
from tasks.spec import Edit, StepPlan

PYTEST = "python3 -B -m pytest -q"  # -B: no .pyc, so a same-second edit is never hidden by a stale cache
SUITE = f"{PYTEST} tests"  # the real pytest: the task's test command and final acceptance
FAST_SUITE = f"{RUN_TESTS} tests"  # the same tests through the shipped fast runner: step and invariant checks
# step id -> (kind, files it must have read, path prefixes it migrates): the oracles' plan
Meta = dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]
PROTECTED = ("tests/**", "tools/**", "fixtures/**", "pytest.ini")
AUTHORS = (
    "Dana Okafor <dana.okafor@example.org>",
    "Ravi Menon <ravi.menon@example.org>",
    "Lena Vogt <lena.vogt@example.org>",
    "Sam Whitlock <sam.whitlock@example.org>",
)

# Top-level package names: none shadows the stdlib, pytest or the harness's own packages.
PACKAGES = (
    "billing",
    "shipping",
    "catalog",
    "inventory",
    "payroll",
    "reporting",
    "accounts",
    "orders",
    "alerts",
    "auditing",
    "checkout",
    "exports",
    "feeds",
    "fleet",
    "forecasts",
    "helpdesk",
    "kiosk",
    "ledgers",
    "mailing",
    "metering",
    "notices",
    "onboarding",
    "pricing",
    "quotes",
    "ratings",
    "refunds",
    "rentals",
    "scheduling",
    "surveys",
    "tickets",
    "uploads",
    "vendors",
    "warehouse",
    "wishlist",
    "invoicing",
    "loyalty",
    "booking",
    "claims",
    "coupons",
    "payouts",
    "permits",
    "receipts",
    "shifts",
    "stock",
)
MODULES = (
    "sync",
    "jobs",
    "views",
    "worker",
    "poller",
    "importer",
    "exporter",
    "reconcile",
    "digest",
    "service",
    "sweep",
    "batch",
    "reminders",
    "summary",
    "hooks",
    "refresh",
    "notify",
    "ingest",
    "publish",
    "archive",
    "snapshot",
    "backfill",
    "rollup",
    "audit",
)
RESOURCES = (
    "orders",
    "invoices",
    "items",
    "users",
    "events",
    "refunds",
    "labels",
    "quotes",
    "parcels",
    "tickets",
    "rates",
    "stock",
    "sessions",
    "coupons",
    "vendors",
    "notes",
)
FIELDS = ("amount", "qty", "weight", "score", "price", "count", "size", "total", "level", "age")


def fill_template(template: str, subs: dict[str, str]) -> str:
    """Fill @NAME@ placeholders (templates of shipped files need no brace escaping)."""
    for key, value in subs.items():
        template = template.replace(f"@{key}@", value)
    return template


def pick(rng: random.Random, pool: Iterable[str], k: int, taken: set[str] | None = None) -> list[str]:
    """k distinct names from pool, none in `taken` (which is updated)."""
    taken = set() if taken is None else taken
    names = rng.sample([p for p in pool if p not in taken], k)
    taken.update(names)
    return names


def sid(i: int) -> str:
    return f"s{i:02d}"


# ---- filler: pure helpers that give modules realistic size without touching the API ----

_FILLERS = (
    (
        'def {name}(rows):\n    """Keep the rows that have a {a} value, with {b} defaulted to {n}."""\n'
        '    out = []\n    for row in rows:\n        if row.get("{a}") is None:\n            continue\n'
        '        out.append({{"{a}": row["{a}"], "{b}": row.get("{b}", {n})}})\n    return out\n'
    ),
    (
        'def {name}(rows):\n    """Total {a} per {b} value, for the daily report."""\n    totals = {{}}\n'
        '    for row in rows:\n        key = row.get("{b}", "none")\n'
        '        totals[key] = totals.get(key, 0) + row.get("{a}", 0)\n    return totals\n'
    ),
    (
        'def {name}(rows, limit={n}):\n    """The first `limit` rows, highest {a} first (ties keep input order)."""\n'
        '    ranked = sorted(rows, key=lambda row: -row.get("{a}", 0))\n    return ranked[:limit]\n'
    ),
    (
        'def {name}(rows):\n    """One summary line per row, as the {b} export expects."""\n'
        '    return ["{{}}:{{}}".format(row.get("{b}", "?"), row.get("{a}", 0)) for row in rows]\n'
    ),
    (
        'def {name}(rows):\n    """Rows whose {a} is above the {b} threshold of {n}."""\n'
        '    return [row for row in rows if row.get("{a}", 0) > row.get("{b}", {n})]\n'
    ),
)
_VERBS = ("collect", "group", "rank", "format", "filter", "tally", "select", "gather", "order", "list")


def fillers(rng: random.Random, k: int, taken: set[str]) -> list[tuple[str, str]]:
    """k (name, source) filler functions; names are unique within `taken`."""
    out = []
    for _ in range(k):
        a, b = rng.sample(FIELDS, 2)
        while True:
            name = f"{rng.choice(_VERBS)}_{a}_by_{b}" if rng.random() < 0.5 else f"{rng.choice(_VERBS)}_{a}"
            if name not in taken:
                break
            a, b = rng.sample(FIELDS, 2)
        taken.add(name)
        out.append((name, rng.choice(_FILLERS).format(name=name, a=a, b=b, n=rng.randint(2, 9))))
    return out


# One write site of a caller module: (resource, function name, how the module spells the API call)
# -> (the function's source, its test), drawing the family's own values
Site = Callable[[str, str, str], tuple[str, str]]


def caller_module(
    rng: random.Random,
    api: tuple[str, str, str],
    pkg: str,
    mod: str,
    doc: str,
    sites: int,
    filler: int,
    sibling: tuple[str, str] | None,
    verbs: tuple[str, ...],
    site: Site,
) -> tuple[str, list[str], list[str]]:
    """A caller module of the API `api` (package, module, function): `sites` functions calling
    it (`site`), filler helpers between them and, with `sibling`, one using a sibling module's
    helper. Returns its text, its tests and its filler helpers' names."""
    core, api_mod, fn = api
    attr = rng.random() < 0.3  # `from core import module` + `module.fn(...)` instead of `fn(...)`
    call = f"{api_mod}.{fn}" if attr else fn
    head = [
        f'"""{pkg.capitalize()} {mod}: {doc}"""',
        "",
        f"from {core} import {api_mod}" if attr else f"from {core}.{api_mod} import {fn}",
    ]
    if sibling:
        head.append(f"from {pkg}.{sibling[0]} import {sibling[1]}")
    bodies, tests = [], []
    taken: set[str] = set()
    for res in rng.sample(RESOURCES, sites):
        body, test = site(res, site_name(rng, verbs, res, taken), call)
        bodies.append(body)
        tests.append(test)
    helpers = fillers(rng, filler, taken)
    for _name, src in helpers:
        bodies.insert(rng.randint(0, len(bodies)), src)
    if sibling:
        bodies.append(
            count_rows(f"count_{mod}_rows", f"How many rows the {sibling[0]} helper keeps.", sibling[1])
        )
    return caller_text(head, bodies), tests, [name for name, _ in helpers]


def site_name(rng: random.Random, verbs: Iterable[str], res: str, taken: set[str]) -> str:
    """`<verb>_<res>`, a verb drawn until the name is not in `taken` (which is updated)."""
    verbs = tuple(verbs)
    func = f"{rng.choice(verbs)}_{res}"
    while func in taken:
        func = f"{rng.choice(verbs)}_{res}"
    taken.add(func)
    return func


def caller_text(head: list[str], bodies: list[str]) -> str:
    """A caller module: its head lines, then its functions two blank lines apart."""
    return snippet("common/callers.py.j2", "module", head, [b.rstrip("\n") for b in bodies])


def count_rows(name: str, doc: str, helper: str) -> str:
    """A function of a caller module that uses a helper of a sibling module (the package's call graph)."""
    return snippet("common/callers.py.j2", "count_rows", name, doc, helper)


# ---- reading perceived Python text ----

# CPython 3.11 builds an AST's Python objects with a recursion counter kept in interpreter-wide
# state, so two threads parsing at once can fail with "SystemError: AST constructor recursion
# depth mismatch" (gh-106905); the threads launcher runs many trials in one process. Every
# in-process parse goes through `parse_source`, one at a time.
_PARSING = threading.Lock()


def parse_source(text: str, filename: str = "<unknown>") -> ast.Module:
    """ast.parse, safe to call from many threads at once (raises SyntaxError as it does)."""
    with _PARSING:
        return ast.parse(text, filename)


@functools.lru_cache(maxsize=512)  # the sim's oracle reads the same files every turn
def parse(text: str) -> ast.Module | None:
    """The module's AST, shared between callers: read it, never change it."""
    try:
        return parse_source(text)
    except SyntaxError:
        return None


def assigned(text: str, name: str, kind: type[ast.expr] = ast.expr) -> Any:
    """The value of the first top-level `name = <value>` in `text` whose value is a `kind` node
    (None when there is none or the text does not parse): how an oracle reads a module's table."""
    tree = parse(text)
    for x in tree.body if tree else ():
        if (
            isinstance(x, ast.Assign)
            and getattr(x.targets[0], "id", "") == name
            and isinstance(x.value, kind)
        ):
            return x.value
    return None


def offsets(text: str) -> list[int]:
    """Character offset of each line start (1-based line numbers index it at [line - 1])."""
    starts, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        starts.append(pos)
    return starts


def span(text: str, node: Any, starts: list[int] | None = None) -> tuple[int, int]:
    """Character span of an AST node (the generated repositories are ASCII, so columns are chars)."""
    starts = starts or offsets(text)
    return (starts[node.lineno - 1] + node.col_offset, starts[node.end_lineno - 1] + node.end_col_offset)


def def_span(text: str, name: str) -> tuple[int, int] | None:
    """Span of the top-level `def name`, whole lines, including its trailing newline."""
    tree = parse(text)
    if tree is None:
        return None
    starts = offsets(text)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return starts[first - 1], starts[node.end_lineno or node.lineno]
    return None


def docstring_end(text: str) -> int:
    """Offset just after the module docstring (0 when there is none)."""
    tree = parse(text)
    if (
        tree
        and tree.body
        and isinstance(tree.body[0], ast.Expr)
        and isinstance(getattr(tree.body[0], "value", None), ast.Constant)
    ):
        return span(text, tree.body[0])[1]
    return 0


# ---- building edits ----


class FileEditor:
    """Search/replace edits against one perceived file, each search unique in the text it is
    applied to (the edit tool refuses a search that occurs more than once)."""

    def __init__(self, path: str, text: str):
        self.path, self.text = path, text
        self.edits: list[Edit] = []

    def replace_span(self, start: int, end: int, new: str) -> None:
        text = self.text
        lo = text.rfind("\n", 0, start) + 1
        hi = end if end > lo and text[end - 1] == "\n" else (text.find("\n", end) + 1 or len(text))
        while text.count(text[lo:hi]) > 1 and (lo > 0 or hi < len(text)):
            if lo > 0:
                lo = text.rfind("\n", 0, lo - 1) + 1
            else:
                hi = text.find("\n", hi) + 1 or len(text)
        search = text[lo:hi]
        self.edits.append(
            Edit(self.path, "replace", search=search, replace=text[lo:start] + new + text[end:hi])
        )
        self.text = text[:start] + new + text[end:]

    def replace(self, old: str, new: str) -> bool:
        at = self.text.find(old)
        if at < 0:
            return False
        self.replace_span(at, at + len(old), new)
        return True


def apply_edit(files: dict[str, str], edit: Edit) -> str | None:
    """Apply one edit like the agent's tools do; returns an error message or None."""
    if edit.kind == "write":
        files[edit.path] = edit.content
    elif edit.kind == "delete":
        if files.pop(edit.path, None) is None:
            return f"ERROR: {edit.path} does not exist"
    else:
        text = files.get(edit.path)
        if text is None:
            return f"ERROR: {edit.path} does not exist"
        n = text.count(edit.search)
        if n != 1:
            return f"ERROR: search text occurs {n} times in {edit.path}"
        files[edit.path] = text.replace(edit.search, edit.replace, 1)
    return None


def missing_reads(needs: Iterable[str], perceived: Mapping[str, str]) -> StepPlan | None:
    miss = tuple(p for p in needs if p not in perceived)
    return StepPlan(reads=miss) if miss else None


def in_scope(path: str, scope: Iterable[str]) -> bool:
    """Is `path` an editable source file under one of the scope prefixes ("" = anywhere)?"""
    if not path.endswith(".py") or any(path.startswith(p) for p in ("tests/", "tools/", "fixtures/")):
        return False
    return any(path == s or path.startswith(s.rstrip("/") + "/") or s == "" for s in scope)


def pytest_files(paths: Iterable[str]) -> str:
    """A step check's test selection, through the fast runner (see tasks/common/run_tests.py)."""
    return f"{RUN_TESTS} " + " ".join(paths)


def add_import(ed: FileEditor, line: str) -> None:
    """Insert `line` after the module's last top-level import (or its docstring), once."""
    if line in ed.text.splitlines():
        return
    tree = parse(ed.text)
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)] if tree else []
    if imports:
        pos = offsets(ed.text)[imports[-1].end_lineno or imports[-1].lineno]
        ed.replace_span(pos, pos, ("" if ed.text[:pos].endswith("\n") else "\n") + line + "\n")
    else:
        pos = docstring_end(ed.text)
        ed.replace_span(pos, pos, ("\n\n" if pos else "") + line + ("" if pos else "\n"))


def callee(call: ast.Call) -> str | None:
    """The name a call calls: `f` of `f(...)` and of `module.f(...)`."""
    return getattr(call.func, "id", None) or getattr(call.func, "attr", None)


def swap_unused_import(ed: FileEditor, module: str, old: str, new: str) -> None:
    """`from module import old` becomes `from module import new` once nothing in the text names `old`."""
    tree = parse(ed.text)
    line = f"from {module} import {old}"
    if (
        tree
        and line in ed.text.splitlines()
        and not any(isinstance(x, ast.Name) and x.id == old for x in ast.walk(tree))
    ):
        ed.replace(line + "\n", f"from {module} import {new}\n")


def delete_def(ed: FileEditor, name: str) -> bool:
    """Delete the top-level `def name` and the blank lines after it (before it, when it is last)."""
    found = def_span(ed.text, name)
    if found is None:
        return False
    lo, hi = found
    while ed.text[hi : hi + 1] == "\n":
        hi += 1
    if hi == len(ed.text):
        while lo > 1 and ed.text[lo - 2 : lo] == "\n\n":
            lo -= 1
    ed.replace_span(lo, hi, "")
    return True


def segment(text: str, node: Any, starts: list[int]) -> str:
    lo, hi = span(text, node, starts)
    return text[lo:hi]


def spread(rng: random.Random, total: int, bins: int) -> list[int]:
    """`total` modules over `bins` packages, each >= 1 and at most ~4 (more only when the total
    demands it), so no single step's files outgrow the compaction arm's window."""
    cap = max(4, -(-total // bins))
    counts = [1] * bins
    for _ in range(total - bins):
        counts[rng.choice([i for i, c in enumerate(counts) if c < cap])] += 1
    return counts


def replace_nodes(ed: FileEditor, found: list[tuple[Any, str]]) -> int:
    """Replace each node's text (spans from one parse of `ed.text`), last first so earlier
    offsets stay valid; a node inside one already replaced is left for the next pass."""
    starts = offsets(ed.text)
    done: list[tuple[int, int]] = []
    for lo, hi, new in sorted(((*span(ed.text, node, starts), new) for node, new in found), reverse=True):
        if any(lo < b and a < hi for a, b in done):
            continue
        ed.replace_span(lo, hi, new)
        done.append((lo, hi))
    return len(done)
