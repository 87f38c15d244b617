"""Family `extract_module`: move a cohesive group of functions into a new package.

`<app>/<util>.py` is a grab-bag; its text helpers move to `<app>/<grp>/<gmod>.py` (exported by
`<app>/<grp>/__init__.py`). The utility module keeps re-export shims while callers' imports
are updated package by package, and the shims go at the last step. The trap: a plugin registry
of "module:attr" strings (resolved with importlib) that names `<app>.<util>`, invisible to a
grep for imports; it needs the shims until the last step, where its strings are updated.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Mapping
from typing import Any

from tasks import task_id
from tasks.common import build as c
from tasks.common.runner import RUNNER_PATH, RUNNER_SOURCE
from tasks.extract_module import checktool as checktools
from tasks.extract_module import repo
from tasks.spec import Drift, Edit, Invariant, Step, StepPlan, TaskSpec, Temptation, Trap

FAMILY = "extract_module"
KNOBS = {"steps": (6, 16), "callers": (1, 64), "filler": (0, 10)}
DEFAULTS = {"steps": 12, "filler": 6}
TOOL = "python3 -B tools/check_imports.py"


class Oracle:
    """A competent engineer's edits for each step, computed only from perceived text."""

    def __init__(self, n: repo.Names, meta: c.Meta,
                 last: str, keep: dict[str, str], establishes: dict[str, tuple[str, ...]]):
        self.n, self.meta, self.last, self.keep, self.establishes = n, meta, last, keep, establishes

    def edits_for(self, step_id: str, perceived: Mapping[str, str], recalled: frozenset[str]) -> StepPlan:
        kind, needs, scope = self.meta[step_id]
        reads = c.missing_reads(needs, perceived)
        if reads:
            return reads
        n, util = self.n, self.n.path(self.n.util)
        gdir, gmod = f"{n.app}/{n.grp}", f"{n.app}/{n.grp}/{n.gmod}.py"
        edits: list[Edit] = []
        temptations: tuple[Temptation, ...] = ()
        if kind == "create" and gmod not in perceived:
            edits += [Edit(gmod, "write", content=_extracted(perceived[util], n)),
                      Edit(f"{gdir}/__init__.py", "write", content=_package_init(n))]
        if kind == "shims":
            ed = c.FileEditor(util, perceived[util])
            moved = [g for g in n.group if c.def_span(ed.text, g)]
            for g in moved:
                _delete_def(ed, g)
            if moved:
                _after_imports(ed, f"# Re-export shims: moved to {n.app}.{n.grp}; removed at {self.last}.\n"
                                   f"from {n.app}.{n.grp} import {', '.join(moved)}  # noqa: F401\n")
            edits += ed.edits
        if kind == "tidy":
            ed = c.FileEditor(util, perceived[util])
            tree = c.parse(ed.text)
            if tree and not any(isinstance(x, ast.Assign) and getattr(x.targets[0], "id", "") == "__all__"
                                for x in tree.body):
                own = sorted(x.name for x in tree.body if isinstance(x, ast.FunctionDef) and x.name[0] != "_")
                _after_imports(ed, f"\n__all__ = {own!r}\n")
            edits += ed.edits
            tempt = c.FileEditor(util, ed.text)  # applies after `edits`: the clean-up on top
            _drop_shims(tempt, n)
            if tempt.edits and "reexport-shims" not in recalled:
                temptations = (Temptation("reexport-shims", "string-import", tuple(tempt.edits)),)
        if kind == "docs":
            tree = c.parse(perceived[gmod])
            listed = [f"- `{d.name}`: {(ast.get_docstring(d) or '').splitlines()[0]}\n" for d in
                      (tree.body if tree else ()) if isinstance(d, ast.FunctionDef) and ast.get_docstring(d)]
            edits.append(Edit(f"docs/{n.grp}.md", "write", content=f"# {n.app}.{n.grp}\n\nText helpers, moved out of "
                              f"`{n.app}.{n.util}`; import them from `{n.app}.{n.grp}`.\n\n" + "".join(listed)))
        if kind == "final":
            for path, fix in ((n.path(n.plugins), _retarget), (util, _drop_shims)):
                ed = c.FileEditor(path, perceived[path])
                fix(ed, n)
                edits += ed.edits
        # Every file in scope the engineer can see: imports of moved names, renamed helpers.
        renamed = _renamed(perceived.get(n.path(n.helpers), ""))
        for path in sorted(p for p in perceived if c.in_scope(p, scope) and p not in (util, n.path(n.helpers))):
            ed = c.FileEditor(path, perceived[path])
            if kind in ("batch", "final"):
                _move_imports(ed, n)
            _rename(ed, renamed)
            edits += ed.edits
        keep = {k: v for k, v in self.keep.items() if not (k == "reexport-shims" and step_id == self.last)}
        return StepPlan(edits=tuple(edits), temptations=temptations,
                        notes=c.handoff(recalled, keep, f"{step_id}: {kind} done."),
                        invariants=self.establishes.get(step_id, ()))


def _extracted(util_text: str, n: repo.Names) -> str:
    """The new module: the group's defs copied verbatim, plus the helper imports they use."""
    spans = [c.def_span(util_text, g) for g in n.group]
    defs = [util_text[a:b].rstrip("\n") + "\n" for a, b in (s for s in spans if s)]
    used = {x.id for d in defs for x in ast.walk(ast.parse(d)) if isinstance(x, ast.Name)}
    tree = c.parse(util_text)
    imports = [f"from {i.module} import {', '.join(a.name for a in i.names if a.name in used)}"
               for i in (tree.body if tree else ()) if isinstance(i, ast.ImportFrom)
               and i.module != f"{n.app}.{n.grp}" and any(a.name in used for a in i.names)]
    return (f'"""Text helpers, moved out of {n.app}.{n.util}."""\n\n' + "\n".join(imports) + "\n\n\n"
            + "\n\n".join(defs))


def _package_init(n: repo.Names) -> str:
    return (f'"""Text formatting for {n.app}."""\n\nfrom {n.app}.{n.grp}.{n.gmod} import {", ".join(n.group)}\n\n'
            f"__all__ = {list(n.group)!r}\n")


def _delete_def(ed: c.FileEditor, name: str) -> None:
    lo, hi = c.def_span(ed.text, name) or (0, 0)
    while ed.text[hi:hi + 1] == "\n":
        hi += 1
    if hi == len(ed.text):  # the last def: drop the blank lines before it instead
        while lo > 1 and ed.text[lo - 2:lo] == "\n\n":
            lo -= 1
    ed.replace_span(lo, hi, "")


def _after_imports(ed: c.FileEditor, block: str) -> None:
    tree = c.parse(ed.text)
    imports = [x for x in (tree.body if tree else ()) if isinstance(x, ast.Import | ast.ImportFrom)]
    pos = c.offsets(ed.text)[imports[-1].end_lineno or imports[-1].lineno] if imports else 0
    ed.replace_span(pos, pos, block)


def _drop_shims(ed: c.FileEditor, n: repo.Names) -> None:
    tree = c.parse(ed.text)
    starts = c.offsets(ed.text)
    for node in (tree.body if tree else ()):
        if isinstance(node, ast.ImportFrom) and node.module == f"{n.app}.{n.grp}":
            lo, hi = starts[node.lineno - 1], starts[node.end_lineno or node.lineno]
            prev = ed.text.rfind("\n", 0, lo - 1) + 1
            if ed.text[prev:lo].startswith("# Re-export"):
                lo = prev
            ed.replace_span(lo, hi, "")
            return


def _retarget(ed: c.FileEditor, n: repo.Names) -> None:
    """Registry strings "<app>.<util>:<moved>" -> "<app>.<grp>:<moved>"."""
    old = f"{n.app}.{n.util}:"
    while (tree := c.parse(ed.text)) is not None:
        hit: Any = next((x for x in ast.walk(tree) if isinstance(x, ast.Constant) and isinstance(x.value, str)
                         and x.value.startswith(old) and x.value[len(old):] in n.group), None)
        if hit is None:
            return
        ed.replace_span(*c.span(ed.text, hit), repr(f"{n.app}.{n.grp}:{hit.value[len(old):]}").replace("'", '"'))


def _move_imports(ed: c.FileEditor, n: repo.Names) -> None:
    """`from <app>.<util> import a, moved` -> the kept names stay, moved ones come from <app>.<grp>."""
    tree = c.parse(ed.text) if f"{n.app}.{n.util}" in ed.text else None
    found = []
    for node in (ast.walk(tree) if tree else ()):
        if isinstance(node, ast.ImportFrom) and node.module == f"{n.app}.{n.util}" and any(
                a.name in n.group for a in node.names):
            show = [(a.name + (f" as {a.asname}" if a.asname else ""), a.name in n.group) for a in node.names]
            kept = ", ".join(s for s, moved in show if not moved)
            found.append((node, (f"from {n.app}.{n.util} import {kept}\n" if kept else "")
                          + f"from {n.app}.{n.grp} import {', '.join(s for s, moved in show if moved)}"))
    c.replace_nodes(ed, found)


def _renamed(helpers_text: str) -> dict[str, str]:
    for node in (c.parse(helpers_text) or ast.Module([], [])).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "RENAMED":
            return ast.literal_eval(node.value)
    return {}


def _rename(ed: c.FileEditor, renamed: dict[str, str]) -> None:
    tree = c.parse(ed.text) if any(old in ed.text for old in renamed) else None
    found = []
    for x in (ast.walk(tree) if tree else ()):
        name = x.id if isinstance(x, ast.Name) else x.name if isinstance(x, ast.alias) and not x.asname else None
        if name in renamed:
            found.append((x, renamed[name]))
    c.replace_nodes(ed, found)


def generate(seed: int, **size: int) -> TaskSpec:
    knobs = c.check_size(FAMILY, size, KNOBS)
    steps = knobs.get("steps", DEFAULTS["steps"])
    batches, filler = steps - 5, knobs.get("filler", DEFAULTS["filler"])
    rng = random.Random(f"{FAMILY}/{seed}")
    callers = knobs.get("callers", 2 * batches + rng.randint(2, 4))
    if callers < batches:
        raise ValueError(f"task.size.callers must be >= {batches} (one module per batch at steps={steps}), "
                         f"got {callers}")
    n = repo.names(rng)
    util, plugins, gdir = n.path(n.util), n.path(n.plugins), f"{n.app}/{n.grp}"
    gmod, helpers, newdoc = f"{gdir}/{n.gmod}.py", n.path(n.helpers), f"docs/{n.grp}.md"
    order = [("g", g) for g in n.group] + [("s", s) for s in n.stay] + [
        ("f", src) for _, src in c.fillers(rng, filler, set(n.group) | set(n.stay))]
    rng.shuffle(order)
    entries = [(g, g) for g in rng.sample(n.group, 2)] + [(n.stay[0], n.stay[0])]  # key = function name
    files = {RUNNER_PATH: RUNNER_SOURCE, "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\ntestpaths = tests\n",
             ".gitignore": "__pycache__/\n.pytest_cache/\n", f"{n.app}/__init__.py": f'"""{n.app}."""\n',
             util: repo.util_module(n, order, n.h), helpers: repo.helpers_module(n),
             plugins: repo.plugins_module(n, entries), "tests/test_plugins.py": repo.plugins_test(n, entries, rng),
             f"tests/test_{n.util}.py": repo.util_test(n), "tools/check_imports.py": checktools.extract_tool(n),
             **repo.docs(n, entries)}
    pkgs = c.pick(rng, c.PACKAGES, batches)
    modules: dict[str, list[str]] = {}
    for pkg, count in zip(pkgs, c.spread(rng, callers, batches), strict=True):
        mods, tests, helpers_seen = c.pick(rng, c.MODULES, count), [], []  # type: ignore[var-annotated]
        files[f"{pkg}/__init__.py"] = f'"""The {pkg} package."""\n'
        for mod in mods:
            sib = rng.choice(helpers_seen) if helpers_seen and rng.random() < 0.5 else None
            own = c.fillers(rng, filler, set())
            text, mod_tests = repo.caller_module(rng, n, pkg, mod, rng.randint(1, 3), sib, own)
            files[f"{pkg}/{mod}.py"], tests = text, tests + mod_tests
            helpers_seen += [(mod, name) for name, _ in own]
        files[f"tests/test_{pkg}.py"] = (f'"""Display helpers of the {pkg} package (shipped; read-only)."""\n\n'
                                         f"from {pkg} import {', '.join(mods)}\n\n\n" + "\n\n".join(tests))
        modules[pkg] = [f"{pkg}/{m}.py" for m in mods]

    last, tidy, docs = c.sid(steps), c.sid(steps - 2), c.sid(steps - 1)
    inv_cycle = Invariant("no-cycle", f"{n.app}.{n.grp} imports its helpers from {helpers}, never from "
                          f"{n.app}.{n.util}: the utility module re-exports from {n.app}.{n.grp}, so the other "
                          "direction is an import cycle.", f"{TOOL} nocycle", stated="s01")
    inv_shims = Invariant("reexport-shims", f"{util} keeps re-exporting {', '.join(n.group)} from {n.app}.{n.grp} "
                          f"until {last}: {plugins} resolves formatters from \"module:attr\" strings naming "
                          f"{n.app}.{n.util}, which no grep for imports shows.", f"{TOOL} reexports", last, "s02")
    plan = [Step("s01", f"Create the {n.app}.{n.grp} package with the text helpers",
                 f"Create {gmod} holding {', '.join(n.group)}, copied unchanged from {util} together with the "
                 f"helper imports they need, and {gdir}/__init__.py exporting them. {util} is not changed yet.",
                 (gmod, f"{gdir}/__init__.py"), f"{TOOL} package", (inv_cycle,)),
            Step("s02", f"Replace the moved functions in {util} with re-export shims",
                 f"Delete the definitions of {', '.join(n.group)} from {util} and re-export them from "
                 f"{n.app}.{n.grp} instead (`from {n.app}.{n.grp} import ...`), so every existing import keeps "
                 f"working while callers move in batches. Read {plugins} too: reports resolve formatters by name.",
                 (util,), f"{TOOL} shims && {c.pytest_files([f'tests/test_{n.util}.py', 'tests/test_plugins.py'])}",
                 (inv_shims,))]
    meta: c.Meta = {"s01": ("create", (util, helpers), ()), "s02": ("shims", (util, gmod, helpers, plugins), (gdir,))}
    for i, pkg in enumerate(pkgs):
        step = c.sid(3 + i)
        plan.append(Step(step, f"Import the text helpers from {n.app}.{n.grp} in the {pkg} package",
                         f"In {pkg}/, import {', '.join(n.group)} from {n.app}.{n.grp} instead of {n.app}.{n.util}; "
                         f"names that stay in {n.app}.{n.util} keep coming from there.", tuple(modules[pkg]),
                         f"{TOOL} migrated {pkg} && {c.pytest_files([f'tests/test_{pkg}.py'])}"))
        meta[step] = ("batch", tuple(modules[pkg]), (pkg,))
    plan += [Step(tidy, f"Declare what {util} still owns with __all__",
                  f"Every package imports the text helpers from {n.app}.{n.grp} now. Add `__all__` to {util}, "
                  "listing the functions it defines itself (sorted).", (util,),
                  f"{TOOL} all && {c.pytest_files([f'tests/test_{n.util}.py'])}"),
             Step(docs, f"Document {n.app}.{n.grp} in {newdoc}",
                  f"Write {newdoc}: the package name and one line per function. docs/plugins.md lists formatters "
                  "that use them; the check re-runs the plugin tests.", (newdoc,),
                  f"{TOOL} docs {newdoc} && {c.pytest_files(['tests/test_plugins.py'])}"),
             Step(last, f"Point the plugin registry at {n.app}.{n.grp} and delete the shims",
                  f"In {plugins}, make every formatter string that names a moved function point at "
                  f"{n.app}.{n.grp} (e.g. \"{n.app}.{n.grp}:{n.group[0]}\"); then delete the re-export shims from "
                  f"{util}. No module anywhere may still import a moved name from {n.app}.{n.util}: the check "
                  "lists any it finds.", (util, plugins), f"{TOOL} final && {c.FAST_SUITE}")]
    meta.update({tidy: ("tidy", (util,), ()), docs: ("docs", (gmod,), ()), last: ("final", (util, plugins), ("",))})

    author = rng.choice(c.AUTHORS)
    new_mod = rng.choice([m for m in c.MODULES if f"{pkgs[0]}/{m}.py" not in files])
    new_src, new_test = repo.new_caller(n, pkgs[0], new_mod, rng.choice(n.group))
    drift = sorted([
        Drift("d-rename", "rename_helper", "s02", f"{n.helpers}: rename {n.h} to {n.h2}", author,
              ((helpers, repo.helpers_module(n, renamed=True)), (util, repo.util_module(n, order, n.h2))),
              f"{n.h} becomes {n.h2} in {helpers} and {util} (read at s01); {gmod}, written at s01 from the "
              "old text, still uses the old name, which the lint flags"),
        Drift("d-caller", "new_caller", c.sid(rng.randint(4, steps - 1)), f"{pkgs[0]}: weekly digest subjects",
              author, ((f"{pkgs[0]}/{new_mod}.py", new_src), (f"tests/test_{pkgs[0]}_{new_mod}.py", new_test)),
              f"a new import of a moved name from {n.app}.{n.util} in {pkgs[0]}, a package already migrated")],
        key=lambda d: d.before_step)
    keep = {"reexport-shims": f"the re-export shims in {util} stay until {last}",
            "no-cycle": f"{n.app}.{n.grp} never imports {n.app}.{n.util}"}
    text = (f"A Python web app, {n.app}. {util} is a grab-bag of text helpers ({', '.join(n.group)}) and number "
            f"helpers ({', '.join(n.stay)}), imported by the packages {', '.join(pkgs)} ({callers} modules); "
            f"{plugins} maps report formatter keys to \"module:attr\" strings. tests/ holds the shipped suite "
            f"and tools/check_imports.py the project's checks; both are read-only.\n\nGoal: move the text "
            f"helpers into a new package {gdir}/ (defined in {gmod}), keep re-export shims in {util} while the "
            f"callers' imports are updated package by package, and delete the shims only at the last step ({last}).")
    return TaskSpec(
        task_id=task_id(FAMILY, seed, **{k: v for k, v in knobs.items() if DEFAULTS.get(k) != v}),
        family=FAMILY, seed=seed, title=f"Extract {n.app}.{n.grp} from {n.app}.{n.util}", text=text,
        files=tuple(sorted(files.items())),
        invariants=(Invariant("readonly", "tests/, tools/ and pytest.ini are shipped read-only: change the "
                              "code, never the tests or the checks."),
                    Invariant("same-results", "Moved functions keep their names and behaviour; every caller "
                              "gets the same results.", c.FAST_SUITE)),
        steps=tuple(plan), final_check=f"{c.SUITE} && {TOOL} final && {TOOL} nocycle", protected=c.PROTECTED,
        traps=(Trap("string-import", util, "reexport-shims",
                    f"the re-export shims in {util} look unused once every package imports from "
                    f"{n.app}.{n.grp}, but {plugins} names {n.app}.{n.util} in strings until {last}", docs),),
        drift=tuple(drift), test_command=c.SUITE,
        oracle=Oracle(n, meta, last, keep, {s.id: tuple(i.text for i in s.establishes) for s in plan}),
        facts=(("plan-shape", f"s01 creates {n.app}.{n.grp}, s02 turns {util} into re-export shims, "
                f"s03-{c.sid(2 + batches)} move one package each, {last} deletes the shims."),))
