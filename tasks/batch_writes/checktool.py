"""The project's own check tool, shipped read-only in every generated repository of
`batch_writes` (tools/check_writes.py), on the pattern of the other families' tools: an
@NAME@ template; every problem prints as `path:line: reason`, since the simulated model
re-reads the files a failing check names."""

from __future__ import annotations

from tasks.batch_writes import repo
from tasks.common import walker

_TOOL = '''"""Checks for moving the callers of @SAVE@ to @BULK@ (shipped with the task; read-only).

    python3 -B tools/check_writes.py bulk | hooks | columns | migrated PATH... | ids | docs PATH | final

Each problem prints as `path:line: reason`; the exit code is 1 if there is any.
"""

import ast
import importlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SAVE, BULK, HOOKS, CHAIN = "@SAVE@", "@BULK@", "@HOOKS@", @CHAIN@
STORE, BACKEND = "@CORE@/@STORE@.py", "@CORE@/@BACKEND@.py"
EXPORT = @EXPORT@  # (module, columns constant, its order): an export another package reads by position
SKIP = {"tests", "tools", "docs", "fixtures"}


@SOURCES@


def per_row(paths):
    out = []
    for path in sources(paths):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Call) and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == SAVE:
                out.append(f"{rel}:{node.lineno}: per-row {SAVE}(...) call; store the rows with {BULK}(rows)")
    return out


def bulk():
    from @CORE@ import @BACKEND@, @STORE@
    fn = getattr(@STORE@, BULK, None)
    if fn is None:
        return [f"{STORE}:1: no {BULK}(rows)"]
    n = 2 * @BACKEND@.LIMIT + 3
    saved, @STORE@._prepare = @STORE@._prepare, lambda row: (row["id"],)
    try:
        @BACKEND@.reset()
        fn([{"id": i} for i in range(n)])
    except Exception as exc:
        return [f"{STORE}:1: {BULK} failed on {n} rows: {exc} ({BACKEND})"]
    finally:
        @STORE@._prepare = saved
    want = -(-n // @BACKEND@.LIMIT)
    if len(@BACKEND@.ROWS) != n or len(@BACKEND@.CALLS) != want:
        return [f"{STORE}:1: {BULK} must store {n} rows in {want} calls of at most {BACKEND} LIMIT; "
                f"stored {len(@BACKEND@.ROWS)} in {len(@BACKEND@.CALLS)}"]
    return []


def hooks():
    """The hooks' order, read from the source: a function's `__name__` is what its process says."""
    value = assigned(STORE, HOOKS)
    got = tuple(getattr(e, "id", ast.unparse(e)) for e in getattr(value, "elts", ()))
    return [] if got == CHAIN else doubt(STORE) or [f"{STORE}:1: {HOOKS} runs {got}; each hook takes what the one before returns: {CHAIN}"]


def columns():
    if EXPORT is None:
        return []
    module, const, order = EXPORT
    got = tuple(getattr(importlib.import_module(module), const, ()))
    where = module.replace(".", "/") + ".py"
    return [] if got == order else [f"{where}:1: {const} is {got}; the export is read by position: {order}"]


def ids():
    from @CORE@ import @BACKEND@, @STORE@
    fn = getattr(@STORE@, "saved_ids", None)
    if fn is None:
        return [f"{STORE}:1: no saved_ids()"]
    @BACKEND@.reset()
    @BACKEND@.put_many([(5, 0, "", 0), (2, 0, "", 0)])
    return [] if fn() == [2, 5] else [f"{STORE}:1: saved_ids() must return the stored ids, sorted"]


def docs(paths):
    from @CORE@ import @BACKEND@
    out = []
    for p in paths:
        text = (ROOT / p).read_text()
        if f"`{BULK}(rows)`" not in text:
            out.append(f"{p}:1: does not document {BULK}(rows)")
        if f"chunks of at most {@BACKEND@.LIMIT} rows" not in text:
            out.append(f"{p}:1: the chunk size is not the backend's: {BACKEND} has LIMIT = {@BACKEND@.LIMIT}")
        chain = "Hooks, in order: " + " -> ".join(f"`{h}`" for h in CHAIN)
        if chain not in text:
            out.append(f"{p}:1: does not list the hooks of {STORE} in order: {chain}")
    return out


def final():
    """What must be gone is read from the source (FACTS), and asked of the code too."""
    from @CORE@ import @BACKEND@, @STORE@
    out = doubt(STORE, BACKEND)
    if bindings(STORE, SAVE) or hasattr(@STORE@, SAVE):
        out.append(f"{STORE}:1: {SAVE} must be gone: every caller stores rows with {BULK}")
    if bindings(BACKEND, "put") or hasattr(@BACKEND@, "put"):
        out.append(f"{BACKEND}:1: the per-row put must be gone")
    return out + per_row(["."])


def main(argv):
    cmd, rest = argv[0], argv[1:]
    problems = {"bulk": bulk, "hooks": hooks, "columns": columns, "ids": ids,
                "final": final}.get(cmd)
    if problems is None and cmd not in ("migrated", "docs"):
        raise SystemExit(f"unknown check {cmd!r}")
    problems = problems() if problems else per_row(rest) if cmd == "migrated" else docs(rest)
    print("\\n".join(problems) or f"ok: {cmd}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def tool(n: repo.Names, export: tuple[str, str, tuple[str, ...]] | None) -> str:
    """`export`: (module path, columns constant, its order), if the task has one."""
    where = (export[0].removesuffix(".py").replace("/", "."), *export[1:]) if export else None
    return walker.shipped(
        _TOOL,
        {
            "SAVE": n.save,
            "BULK": n.bulk,
            "HOOKS": n.hooks,
            "CHAIN": repr(n.chain),
            "CORE": n.core,
            "STORE": n.store,
            "BACKEND": n.backend,
            "EXPORT": repr(where),
        },
    )
