"""How much of the project one default trial touches (issue 40's "before and after" figures).

    python -m bench.perf.trial_path [overrides]       # default: sandbox=local, results under /tmp

Runs `python -m bench`'s trial in this process (preflight, then the runner, as `__main__` does)
and prints:

- modules, lines and statements: the project's modules in `sys.modules` at the end of the trial,
  their lines, and their statements (`ast.stmt` nodes: the count a change of layout, such as
  `ruff format` splitting a call over lines, does not move);
- files to follow one turn: the project files whose code runs during one acting turn (from one
  call of the strategy's `build` to the next; the last turn, which runs on into the trial's end, is
  left out), the median and the largest over the trial's turns,
  with and without the simulated model (`bench/sim/`, the model's inside, not the harness's);
- loop.py's project imports: the `import` lines of bench/trial/loop.py naming a project module;
- compositions and builds: how many times the config is composed (Hydra's composition, for
  preflight and for the job) and the trial's parts are built (`tasks.generate` called by the harness,
  not by the simulated model reading the task id; `make_strategy`; `make_provider`).

Figures, not timings: nothing here depends on the machine.
"""

from __future__ import annotations

import ast
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bench", "strategies", "tasks", "ctxlog", "analysis")


def project_file(path: str) -> str | None:
    try:
        rel = Path(path).resolve().relative_to(ROOT)
    except ValueError:
        return None
    return str(rel) if rel.parts and rel.parts[0] in PACKAGES and rel.suffix == ".py" else None


def statement_count(path: Path) -> int:
    return sum(isinstance(node, ast.stmt) for node in ast.walk(ast.parse(path.read_text())))


def room_of(module: str) -> str:
    """The folder a module lives in, two levels deep (`bench/trial`), or its top-level file."""
    parts = Path(module).parts
    return "/".join(parts[:2]) if len(parts) > 2 else module


def loop_imports() -> list[str]:
    tree = ast.parse((ROOT / "bench" / "trial" / "loop.py").read_text())
    names = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.split(".")[0] in PACKAGES]
    return names


class Turns:
    """The project files each acting turn runs code in, split at each call of a strategy's build."""

    def __init__(self) -> None:
        self.turns: list[set[str]] = []
        self._files: dict[str, str | None] = {}

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        filename = frame.f_code.co_filename
        rel = self._files.get(filename, "?")
        if rel == "?":
            rel = self._files[filename] = project_file(filename)
        if rel is None:
            return
        if frame.f_code.co_name == "build" and rel.startswith("strategies/"):
            self.turns.append(set())
        if self.turns:
            self.turns[-1].add(rel)


def counting(module: Any, name: str, counts: dict[str, int], key: str) -> Callable[[], None]:
    original = getattr(module, name)

    def wrapped(*a: Any, **k: Any) -> Any:
        caller = project_file(sys._getframe(1).f_code.co_filename) or ""
        if not caller.startswith(
            ("bench/sim/", "tasks/")
        ):  # the simulated model regenerates the task it reads
            counts[key] = counts.get(key, 0) + 1
        return original(*a, **k)

    setattr(module, name, wrapped)
    return lambda: setattr(module, name, original)


def main(argv: list[str]) -> None:
    import hydra._internal.config_loader_impl as loader

    import strategies
    import tasks
    from bench import config, preflight, providers

    overrides = argv or ["sandbox=local"]
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="ctxbench-path-") as tmp:
        overrides = [*overrides, f"results_dir={tmp}"]
        undo = [
            counting(loader.ConfigLoaderImpl, "load_configuration", counts, "compositions"),
            counting(tasks, "generate", counts, "task builds"),
            counting(strategies, "make_strategy", counts, "strategy builds"),
            counting(providers, "make_provider", counts, "provider builds"),
        ]
        turns = Turns()
        try:
            prepared = preflight.check(overrides)
            from bench.trial import runner

            cfg = config.compose(overrides)  # what @hydra.main hands the job
            sys.setprofile(turns)
            try:
                result = runner.run(cfg, prepared) if prepared is not None else runner.run(cfg)
            finally:
                sys.setprofile(None)
        finally:
            for u in undo:
                u()
    modules = sorted(
        {
            rel
            for m in list(sys.modules.values())
            if (rel := project_file(getattr(m, "__file__", None) or "")) is not None
            and not rel.startswith("bench/perf/")
        }
    )  # this counter, not the trial's
    sizes = {m: len((ROOT / m).read_text().splitlines()) for m in modules}
    lines = sum(sizes.values())
    statements = sum(statement_count(ROOT / m) for m in modules)
    # the last runs on into the trial's end
    acting = [{f for f in t if not f.startswith("bench/perf/")} for t in turns.turns if t][:-1]
    full = [len(t) for t in acting]
    no_sim = [len({f for f in t if not f.startswith("bench/sim/")}) for t in acting]
    print(f"trial: {result.status} in {result.turns} turns")
    print(f"modules on the path: {len(modules)}, lines: {lines}, statements: {statements}")
    rooms: dict[str, list[int]] = {}
    for m, n in sizes.items():
        tally = rooms.setdefault(room_of(m), [0, 0])
        tally[0], tally[1] = tally[0] + 1, tally[1] + n
    for name, (count, n) in sorted(rooms.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name}: {count} modules, {n} lines")
    print(
        f"files run in one turn: median {statistics.median(full):g}, max {max(full)} "
        f"(without the sim: median {statistics.median(no_sim):g}, max {max(no_sim)})"
    )
    biggest = max(acting, key=lambda t: len({f for f in t if not f.startswith("bench/sim/")}))
    shown = sorted(f for f in biggest if not f.startswith("bench/sim/"))
    print("  the largest turn, without the sim:", ", ".join(shown))
    imports = loop_imports()
    print(
        f"loop.py's project imports: {len({i.rsplit('.', 1)[0] for i in imports})} modules, {len(imports)} names"
    )
    print(
        f"config compositions: {counts.get('compositions', 0)} (preflight and the job), "
        f"builds: task {counts.get('task builds', 0)}, strategy {counts.get('strategy builds', 0)}, "
        f"provider {counts.get('provider builds', 0)}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
