"""Host-side helpers for the task tests: materialise a repository, run check commands fast
in-process, and replay the oracle end to end.

Checks are shell commands for the sandbox (`python3 -B -m pytest ...`, `python3 -B tools/x.py ...`,
joined by `&&`). Spawning a Python per check would make 3 families x 50 seeds x 2 drift arms
x ~13 steps take many minutes, so `run_check` interprets that small command language
in-process: test files are executed as modules and their `test_*` functions called, tool
scripts run with runpy. `run_check_subprocess` is the faithful version (the real pytest); a
test asserts the two agree.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import runpy
import shlex
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

from tasks.common.build import apply_edit
from tasks.common.cleanups import invited
from tasks.spec import Cleanup, Drift, StepPlan, TaskSpec

_ON_DISK: dict[Path, dict[str, str]] = {}  # what write_repo last wrote under each root


def write_repo(root: Path, files: dict[str, str]) -> None:
    """Make `root` hold exactly `files`, writing only what changed since the last call."""
    before = _ON_DISK.get(root)
    if before is None or not root.exists():
        before = {p.relative_to(root).as_posix(): "\0" for p in root.rglob("*") if p.is_file()}
    for path in set(before) - set(files):
        (root / path).unlink(missing_ok=True)
    for path, content in files.items():
        if before.get(path) != content:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
    _ON_DISK[root] = dict(files)


def run_check_subprocess(root: Path, cmd: str) -> tuple[int, str]:
    cmd = cmd.replace("python3 ", f"{shlex.quote(sys.executable)} ")
    # No entry-point plugins: the sandbox's pytest has none, and the host's (hydra...) cost ~0.5 s a run.
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(["sh", "-c", cmd], cwd=root, capture_output=True, text=True, timeout=120, env=env)
    return proc.returncode, proc.stdout + proc.stderr


@contextlib.contextmanager
def _isolated(root: Path) -> Iterator[io.StringIO]:
    """cwd = repo, repo first on sys.path, its modules freshly imported, output captured."""
    tops = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    tops |= {p.stem for p in root.iterdir() if p.suffix == ".py"}

    def purge() -> None:
        for name in [m for m in sys.modules if m.split(".")[0] in tops or m.startswith("_ctxbench_check")]:
            del sys.modules[name]

    saved_path, saved_cwd, saved_argv, saved_bytecode = (
        list(sys.path),
        os.getcwd(),
        sys.argv,
        sys.dont_write_bytecode,
    )
    buf = io.StringIO()
    purge()
    importlib.invalidate_caches()
    sys.path.insert(0, str(root))
    sys.dont_write_bytecode = True
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            yield buf
    finally:
        os.chdir(saved_cwd)
        sys.path[:], sys.argv, sys.dont_write_bytecode = saved_path, saved_argv, saved_bytecode
        purge()


def _pytest(root: Path, args: list[str], out: io.StringIO) -> int:
    targets = [a for a in args if not a.startswith("-")] or ["tests"]
    files: list[tuple[Path, str | None]] = []
    for t in targets:
        path, _, name = t.partition("::")
        p = root / path
        found = sorted(p.glob("test_*.py")) if p.is_dir() else [p]
        files += [(f, name or None) for f in found]
    failed = ran = 0
    for k, (path, only) in enumerate(files):
        rel = path.relative_to(root).as_posix()
        try:
            namespace = runpy.run_path(str(path), run_name=f"_ctxbench_check{k}")
        except BaseException:  # a collection error, like pytest's exit 2
            out.write(f"ERROR collecting {rel}\n{_trace(root)}")
            return 2
        for name, fn in namespace.items():
            if name.startswith("test_") and callable(fn) and (only is None or name == only):
                ran += 1
                try:
                    fn()
                except BaseException:
                    failed += 1
                    out.write(f"FAILED {rel}::{name}\n{_trace(root)}")
    out.write(f"{ran - failed} passed, {failed} failed\n")
    return 1 if failed else (5 if ran == 0 else 0)


def _trace(root: Path) -> str:
    """The current exception's traceback without the runner's own frame, repo-relative."""
    kind, exc, tb = sys.exc_info()
    text = "".join(traceback.format_exception(kind, exc, tb.tb_next if tb else None))
    return text.replace(str(root) + os.sep, "")


def _one(root: Path, argv: list[str], out: io.StringIO) -> int:
    if argv[:1] != ["python3"]:
        raise ValueError(f"in-process runner cannot run {argv!r}")
    argv = [a for a in argv[1:] if a != "-B"]
    if argv[:2] == ["-m", "pytest"]:
        return _pytest(root, argv[2:], out)
    if argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        target, kind = argv[1], "code"
    else:
        sys.argv = argv
        target, kind = str(root / argv[0]), "path"
    try:
        if kind == "code":
            exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if isinstance(code, str):
            out.write(code + "\n")
            return 1
        return int(code or 0)
    except BaseException:
        out.write(_trace(root))
        return 1
    return 0


def run_check(root: Path, cmd: str) -> tuple[int, str]:
    """Run `a && b && ...` in-process; returns (exit code, combined output)."""
    with _isolated(root) as out:
        code = 0
        for part in cmd.split(" && "):
            code = _one(root, shlex.split(part), out)
            if code:
                break
    return code, out.getvalue()


def apply_drift(files: dict[str, str], drift: Drift) -> None:
    for path, content in drift.files:
        if content is None:
            files.pop(path, None)
        else:
            files[path] = content


def apply_plan(files: dict[str, str], plan: StepPlan, cleanups: list[Cleanup] = ()) -> list[str]:
    errors = [e for e in (apply_edit(files, edit) for edit in plan.edits) if e]
    errors += [e for x in cleanups for e in (apply_edit(files, edit) for edit in x.edits) if e]
    return errors


def narrow(spec: TaskSpec, step_id: str, files: dict[str, str]) -> dict[str, str]:
    """What an engineer holds in view for a step when it has read only what the step needs:
    the step's touches and the files the oracle asks to read first."""
    step = spec.step(step_id)
    needs = set(spec.oracle.edits_for(step_id, {}).reads) | set(step.touches)
    return {p: c for p, c in files.items() if p in needs}


def invitations(spec: TaskSpec, step_id: str, before: dict[str, str], plan: StepPlan) -> list[Cleanup]:
    """The tidy-ups the oracle's edits for a step invite, as the simulated model finds them,
    in the narrow view of a step (`narrow`): what looks unused there may be used elsewhere."""
    before = narrow(spec, step_id, before)
    after = dict(before)
    for edit in plan.edits:
        apply_edit(after, edit)
    return invited(spec.oracle, before, after, tuple(sorted({e.path for e in plan.edits})))


def replay(
    spec: TaskSpec,
    root: Path,
    drift: bool,
    runner=run_check,
    tempt_at: str | None = None,
    tempt: str = "",
    hide: frozenset[str] = frozenset(),
    stop_at: str | None = None,
):
    """The oracle end to end: per step, apply drift, ask the oracle with the TRUE files (minus
    `hide`), apply its edits -- and at `tempt_at` the tidy-ups invited there whose key starts
    with `tempt` -- and run the step's check. Yields (step, plan, cleanups done, errors, exit
    code, output, files) per step, then ("final", ...) for the acceptance."""
    files = dict(spec.files)
    for step in spec.steps:
        if drift:
            for d in spec.drift:
                if d.before_step == step.id:
                    apply_drift(files, d)
        perceived = {p: c for p, c in files.items() if p not in hide}
        plan = spec.oracle.edits_for(step.id, perceived)
        assert not plan.reads, (step.id, plan.reads)
        done = (
            [x for x in invitations(spec, step.id, perceived, plan) if x.key.startswith(tempt)]
            if step.id == tempt_at
            else []
        )
        errors = apply_plan(files, plan, done)
        write_repo(root, files)
        code, out = runner(root, step.check)
        yield step, plan, done, errors, code, out, files
        if step.id == stop_at:
            return
    code, out = runner(root, spec.final_check)
    yield "final", None, [], [], code, out, files


def walk(spec: TaskSpec, drift: bool = False):
    """The true tree at the head of each step, the oracle doing every step (no tidy-ups);
    yields (step, files) without running any check."""
    files = dict(spec.files)
    for step in spec.steps:
        for d in spec.drift if drift else ():
            if d.before_step == step.id:
                apply_drift(files, d)
        yield step, dict(files)
        apply_plan(files, spec.oracle.edits_for(step.id, files))
