"""The layout holds: floors import nothing above them, nothing imports in a circle
(docs/design.md §3). A module's size is a smell to look at, not a gate: `scripts/smells.py` lists
the long modules and long lines.

The import graph is read from the source with `ast` (every import statement, including the
lazy ones inside functions: a deferred import is still a dependency). Two things add no edge:
a registry entry (`"bench.sim.provider:SimProvider"`) is a string, not an import; and an
import under `if __name__ == "__main__":` runs only when the file is the script `__main__`,
a module of its own, so it cannot close a loop back to the file's module name.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ctxlog", "bench", "tasks", "strategies", "analysis")


def modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every module of `packages` under `root`."""
    out = {}
    for pkg in packages:
        for f in sorted((root / pkg).rglob("*.py")):
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    """The module of ours that `name` (a module or an attribute of one) lives in."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _is_main_guard(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.test.comparators)
    )


def _imports(tree: ast.AST):
    """Every import node, but those under a main guard."""
    for node in ast.iter_child_nodes(tree):
        if _is_main_guard(node):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports."""
    mods = modules(root, packages)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str] = set()
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    pkg = here
                    for _ in range(node.level - 1):
                        pkg = pkg.rpartition(".")[0]
                    base = f"{pkg}.{base}" if base else pkg
                # `from pkg import mod` depends on pkg.mod; `from mod import name` on mod.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            deps |= {o for t in targets if (o := _owner(t, mods)) is not None and o != name}
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def folder(module: str, mods: dict[str, Path]) -> str:
    """The concept folder a module belongs to: `bench.trial`, `bench.providers` (with `http/`
    and `wire/`), `tasks.signature_migration`, `strategies`, `analysis.report`. A module at the
    top of `bench`, `tasks` or `analysis` (`bench.config`, `bench.__main__`, `tasks.spec`,
    `analysis.settings`) stands on its own: they sit on different floors. So does an analysis
    room's command (`analysis.power.__main__`): nothing imports it (test_nothing_imports_a_command)."""
    parts = module.split(".")
    if parts[0] in ("ctxlog", "strategies"):
        return parts[0]
    if parts[0] == "analysis" and parts[-1] == "__main__":
        return module
    candidate = ".".join(parts[:2])
    return candidate if mods.get(candidate, Path()).name == "__init__.py" else module


def folder_graph(graph: dict[str, set[str]], mods: dict[str, Path]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m, deps in graph.items():
        out.setdefault(folder(m, mods), set()).update(folder(d, mods) for d in deps)
    return {f: deps - {f} for f, deps in out.items()}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_no_module_imports_itself_around_a_loop(graph):
    assert cycles(graph) == []


def test_no_concept_folder_imports_itself_around_a_loop(graph):
    assert cycles(folder_graph(graph, modules(ROOT))) == []


def _offenders(graph: dict[str, set[str]], sources, allowed) -> list[str]:
    return sorted(
        f"{m} imports {d}" for m, deps in graph.items() if sources(m) for d in deps if not allowed(d)
    )


def event_floor(module: str) -> bool:
    """The event log's contract (schema, reader, statements): what harness and analysis share."""
    return module.split(".")[0] == "ctxlog"


def ground_floor(module: str) -> bool:
    """The shared vocabulary: `bench.core`, the task contract `tasks.spec`, and `ctxlog`."""
    return (
        module == "bench.core"
        or module.startswith("bench.core.")
        or module == "tasks.spec"
        or event_floor(module)
    )


def test_the_ground_floor_imports_nothing_above_it(graph):
    assert _offenders(graph, ground_floor, ground_floor) == []


def test_the_event_log_contract_imports_nothing_of_the_project(graph):
    assert _offenders(graph, event_floor, event_floor) == []


def test_strategies_and_tasks_import_only_the_ground_floor_of_bench(graph):
    outside = lambda d: not d.startswith("bench") or d.startswith("bench.core")  # noqa: E731
    assert _offenders(graph, lambda m: m.split(".")[0] in ("strategies", "tasks"), outside) == []


def test_analysis_imports_no_harness(graph):
    """Its whole input is MLflow and the event logs, read through ctxlog (the one reader)."""
    harness = ("bench", "tasks", "strategies")
    assert (
        _offenders(graph, lambda m: m.startswith("analysis"), lambda d: d.split(".")[0] not in harness) == []
    )


# -- the checks themselves can fail ---------------------------------------------------------
def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_a_cycle_through_a_lazy_import_is_found(tmp_path):
    _write(
        tmp_path,
        {
            "bench/__init__.py": "",
            "bench/a.py": "from bench import b\n",
            "bench/b.py": "def f():\n    from bench.c import g\n",
            "bench/c.py": "from .a import x\n",
            "bench/d.py": "import bench.a\n",
            "bench/e.py": "import bench.f\n",
            "bench/f.py": "if __name__ == '__main__':\n    import bench.e\n",  # the script __main__, not bench.f
        },
    )
    assert cycles(import_graph(tmp_path, ("bench",))) == [["bench.a", "bench.b", "bench.c"]]


def test_a_folder_cycle_without_a_module_cycle_is_found(tmp_path):
    _write(
        tmp_path,
        {
            "bench/__init__.py": "",
            "bench/x/__init__.py": "",
            "bench/y/__init__.py": "",
            "bench/x/one.py": "from bench.y.two import T\n",
            "bench/x/three.py": "",
            "bench/y/two.py": "",
            "bench/y/four.py": "from bench.x import three\n",
        },
    )
    g = import_graph(tmp_path, ("bench",))
    assert cycles(g) == []
    assert cycles(folder_graph(g, modules(tmp_path, ("bench",)))) == [["bench.x", "bench.y"]]


def test_a_ground_floor_import_from_above_is_an_offender(tmp_path):
    _write(
        tmp_path,
        {
            "bench/__init__.py": "",
            "bench/core/__init__.py": "",
            "bench/trial.py": "",
            "bench/core/types.py": "def f():\n    from bench.trial import run\n",
        },
    )
    g = import_graph(tmp_path, ("bench",))
    assert _offenders(g, ground_floor, ground_floor) == ["bench.core.types imports bench.trial"]


# -- analysis: rooms on floors ----------------------------------------------------------------
# Each room of analysis/ (a concept folder, or a ground module) and its floor: a module may
# import its own room and rooms on lower floors only. A room's command (`<room>/__main__.py`,
# run as `python -m analysis.<room>`) is imported by nothing, so it may stand on any floor.
ANALYSIS_FLOORS: dict[str, int] = {
    "analysis.settings": 0,
    "analysis.render": 0,
    "analysis.stats": 0,
    "analysis.load": 0,
    "analysis.power": 0,
    "analysis": 1,  # the package's face: load_runs
    "analysis.diff": 1,
    "analysis.calibrate": 1,
    "analysis.sensitivity": 1,
    "analysis.measures": 1,
    "analysis.fairness": 1,
    "analysis.report": 2,
}
HYDRA_READER = "analysis.settings"  # the one module of analysis that reads the Hydra config


def is_command(module: str) -> bool:
    return module.split(".")[-1] == "__main__"


def room_offenders(graph: dict[str, set[str]], mods: dict[str, Path], floors: dict[str, int]) -> list[str]:
    """Imports that run sideways or up between rooms, and modules in no room."""
    out = []
    for m, deps in graph.items():
        if not m.startswith("analysis") or is_command(m):
            continue
        here = folder(m, mods)
        if here not in floors:
            out.append(f"{m} is in no room (add it to ANALYSIS_FLOORS)")
            continue
        for d in sorted(deps):
            there = folder(d, mods)
            if d.startswith("analysis") and there != here and floors.get(there, 99) >= floors[here]:
                out.append(f"{m} (floor {floors[here]}) imports {d} (floor {floors.get(there, '?')})")
    return sorted(out)


def command_importers(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{m} imports {d}" for m, deps in graph.items() for d in deps if is_command(d))


def hydra_readers(root: Path, packages: tuple[str, ...] = ("analysis",)) -> list[str]:
    """Modules of analysis that import hydra or omegaconf (lazily or not)."""
    found = []
    for name, path in modules(root, packages).items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(n.split(".")[0] in ("hydra", "omegaconf") for n in names):
                found.append(name)
                break
    return sorted(found)


def guarded_imports(root: Path, packages: tuple[str, ...] = ("analysis",)) -> list[str]:
    """Modules that import under `if __name__ == "__main__":`, the shim that let a command
    reach above its floor unseen by the cycle check (a command of analysis is its room's
    `__main__.py`, whose imports all count)."""
    found = []
    for name, path in modules(root, packages).items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if _is_main_guard(node) and any(
                isinstance(n, ast.Import | ast.ImportFrom) for n in ast.walk(node)
            ):
                found.append(name)
    return sorted(found)


def test_no_analysis_import_hides_under_a_main_guard():
    assert guarded_imports(ROOT) == []


def test_analysis_rooms_import_only_lower_floors(graph):
    assert room_offenders(graph, modules(ROOT), ANALYSIS_FLOORS) == []


def test_every_analysis_room_has_a_floor_and_exists():
    mods = modules(ROOT, ("analysis",))
    rooms = {folder(m, mods) for m in mods if not is_command(m)}
    assert sorted(rooms ^ set(ANALYSIS_FLOORS)) == []


def test_nothing_imports_a_command(graph):
    assert command_importers(graph) == []


def test_only_settings_reads_the_hydra_config():
    assert hydra_readers(ROOT) == [HYDRA_READER]


def test_a_sideways_or_upward_room_import_is_an_offender(tmp_path):
    _write(
        tmp_path,
        {
            "analysis/__init__.py": "",
            "analysis/settings.py": "",
            "analysis/low/__init__.py": "",
            "analysis/low/a.py": "def f():\n    from analysis.high import b\n",
            "analysis/high/__init__.py": "",
            "analysis/high/b.py": "from analysis.low import a\nimport analysis.settings\n",
            "analysis/side/__init__.py": "",
            "analysis/side/c.py": "from analysis.low.a import f\n",
            "analysis/low/d.py": "from analysis.side import c\n",
            "analysis/high/__main__.py": "from analysis.top import e\n",  # a command may stand on any floor
            "analysis/top/__init__.py": "",
            "analysis/top/e.py": "from analysis.high.__main__ import main\n",
            "analysis/stray.py": "",
        },
    )
    mods = modules(tmp_path, ("analysis",))
    g = import_graph(tmp_path, ("analysis",))
    floors = {
        "analysis": 0,
        "analysis.settings": 0,
        "analysis.low": 1,
        "analysis.side": 1,
        "analysis.high": 2,
        "analysis.top": 3,
    }
    assert room_offenders(g, mods, floors) == [
        "analysis.low.a (floor 1) imports analysis.high.b (floor 2)",  # up, through a lazy import
        "analysis.low.d (floor 1) imports analysis.side.c (floor 1)",  # sideways
        "analysis.side.c (floor 1) imports analysis.low.a (floor 1)",
        "analysis.stray is in no room (add it to ANALYSIS_FLOORS)",
        "analysis.top.e (floor 3) imports analysis.high.__main__ (floor ?)",
    ]  # a command is no floor to stand on
    assert command_importers(g) == ["analysis.top.e imports analysis.high.__main__"]
    # high's command stands on its own, so its import of top closes no loop through high; it
    # loops only with top, which imports it (what test_nothing_imports_a_command forbids).
    assert cycles(folder_graph(g, mods)) == [
        ["analysis.high", "analysis.low", "analysis.side"],
        ["analysis.high.__main__", "analysis.top"],
    ]


def test_an_import_under_a_main_guard_is_found(tmp_path):
    _write(
        tmp_path,
        {
            "analysis/__init__.py": "",
            "analysis/a.py": "def main():\n    pass\n",
            "analysis/b.py": "if __name__ == '__main__':\n    from analysis.c import main\n",
            "analysis/c.py": "if __name__ == '__main__':\n    raise SystemExit(main())\n",
        },
    )
    assert guarded_imports(tmp_path) == ["analysis.b"]


def test_a_hydra_import_outside_settings_is_found(tmp_path):
    _write(
        tmp_path,
        {
            "analysis/__init__.py": "",
            "analysis/settings.py": "import hydra\n",
            "analysis/x/__init__.py": "",
            "analysis/x/y.py": "def f():\n    from omegaconf import OmegaConf\n",
            "analysis/x/z.py": "from . import y\n",
        },
    )
    assert hydra_readers(tmp_path) == ["analysis.settings", "analysis.x.y"]


def test_an_event_floor_import_of_the_harness_is_an_offender(tmp_path):
    _write(
        tmp_path,
        {
            "ctxlog/__init__.py": "",
            "ctxlog/reader.py": "from ctxlog import events\n",
            "ctxlog/events.py": "from bench.core.types import Message\n",
            "bench/__init__.py": "",
            "bench/core/__init__.py": "",
            "bench/core/types.py": "",
        },
    )
    g = import_graph(tmp_path, ("ctxlog", "bench"))
    assert _offenders(g, event_floor, event_floor) == ["ctxlog.events imports bench.core.types"]
    # bench.core is ground floor too: only this rule sees it
    assert _offenders(g, ground_floor, ground_floor) == []
