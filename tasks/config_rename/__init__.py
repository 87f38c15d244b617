"""Family `config_rename`: rename a configuration key across code, docs and examples.

The shipped fixtures (`fixtures/*.json`) are read-only test data that keep the old key, so
the rename needs a permanent fallback: a new accessor `<acc>(cfg, key, default)` reads the new
key and falls back to the old one. Readers move to the accessor package by package; docs,
the config template and the example follow. The trap: once nothing in the code names the old
key, the fallback looks like dead legacy code, and a late step edits the accessor's module.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Mapping
from typing import Any

from tasks import task_id
from tasks.common import build as c
from tasks.common.runner import RUNNER_PATH, RUNNER_SOURCE
from tasks.config_rename import repo
from tasks.spec import Drift, Edit, Invariant, Step, StepPlan, TaskSpec, Temptation, Trap

FAMILY = "config_rename"
KNOBS = {"steps": (6, 16), "callers": (1, 64), "filler": (0, 10)}
DEFAULTS = {"steps": 12, "filler": 5}
TOOL = "python3 -B tools/check_keys.py"
DOCS = ("docs/configuration.md", "docs/deploy.md")
EXAMPLE = "examples/deploy.json"


class Oracle:
    """A competent engineer's edits for each step, computed only from perceived text."""

    def __init__(self, n: repo.Names, meta: c.Meta,
                 keep: dict[str, str], establishes: dict[str, tuple[str, ...]]):
        self.n, self.meta, self.keep, self.establishes = n, meta, keep, establishes

    def edits_for(self, step_id: str, perceived: Mapping[str, str], recalled: frozenset[str]) -> StepPlan:
        kind, needs, scope = self.meta[step_id]
        reads = c.missing_reads(needs, perceived)
        if reads:
            return reads
        n = self.n
        edits: list[Edit] = []
        temptations: tuple[Temptation, ...] = ()
        if kind == "create" and f"def {n.acc}(" not in perceived.get(n.settings, ""):
            edits.append(Edit(n.settings, "write", content=repo.settings_module(n)))
        if kind == "tidy":
            ed = c.FileEditor(n.settings, perceived[n.settings])
            if c.def_span(ed.text, f"{n.acc}_int") is None and (at := c.def_span(ed.text, n.acc)):
                ed.replace_span(at[1], at[1], "\n\n" + repo.int_function(n))
            edits += ed.edits
            tempt = c.FileEditor(n.settings, ed.text)  # applies after `edits`: the clean-up on top
            _drop_fallback(tempt)
            if tempt.edits and "fixture-fallback" not in recalled:
                temptations = (Temptation("fixture-fallback", "old-key-fallback", tuple(tempt.edits)),)
        text_files = needs if kind == "docs" else sorted(
            p for p in perceived if kind == "final" and p.endswith((".md", ".json"))
            and not p.startswith(("tests/", "tools/", "fixtures/")))
        for path in text_files:
            ed = c.FileEditor(path, perceived[path])
            _rename_text(ed, n)
            edits += ed.edits
        for path in sorted(p for p in perceived if c.in_scope(p, scope) and p != n.settings):
            ed = c.FileEditor(path, perceived[path])
            _migrate_reads(ed, n)
            edits += ed.edits
        return StepPlan(edits=tuple(edits), temptations=temptations,
                        notes=c.handoff(recalled, self.keep, f"{step_id}: {kind} done."),
                        invariants=self.establishes.get(step_id, ()))


def _migrate_reads(ed: c.FileEditor, n: repo.Names) -> None:
    """cfg["old"] / cfg.get("old", d) -> acc(cfg, "new"[, d]); any other "old" literal -> "new"."""
    via_accessor = False

    def is_old(x: ast.AST) -> bool:
        return isinstance(x, ast.Constant) and x.value == n.old

    while n.old in ed.text and (tree := c.parse(ed.text)) is not None:
        starts = c.offsets(ed.text)
        reads: list[tuple[Any, str]] = []
        literals: list[tuple[Any, str]] = []
        x: Any
        for x in ast.walk(tree):
            if isinstance(x, ast.Subscript) and is_old(x.slice) and isinstance(x.ctx, ast.Load):
                reads.append((x, f'{n.acc}({c.segment(ed.text, x.value, starts)}, "{n.new}")'))
            elif isinstance(x, ast.Call) and getattr(x.func, "attr", None) == "get" and x.args and is_old(x.args[0]):
                extra = "".join(", " + c.segment(ed.text, a, starts) for a in x.args[1:])
                owner = x.func.value  # type: ignore[attr-defined]  # an Attribute: `.get` was matched
                reads.append((x, f'{n.acc}({c.segment(ed.text, owner, starts)}, "{n.new}"{extra})'))
            elif is_old(x):
                literals.append((x, f'"{n.new}"'))
        if not c.replace_nodes(ed, reads or literals):  # reads first: their literal is inside them
            break
        via_accessor = via_accessor or bool(reads)
    if via_accessor:
        c.add_import(ed, f"from {n.app}.{n.smod} import {n.acc}")


def _rename_text(ed: c.FileEditor, n: repo.Names) -> None:
    word = re.compile(rf"\b{re.escape(n.old)}\b")
    while m := word.search(ed.text):
        lo = ed.text.rfind("\n", 0, m.start()) + 1
        hi = ed.text.find("\n", m.start()) + 1 or len(ed.text)
        ed.replace_span(lo, hi, word.sub(n.new, ed.text[lo:hi]))


def _drop_fallback(ed: c.FileEditor) -> None:
    """The tempting clean-up: the alias loop and the ALIASES table."""
    for pick_node in (lambda x: isinstance(x, ast.For), lambda x: isinstance(x, ast.Assign)
                      and getattr(x.targets[0], "id", "") == "ALIASES"):
        tree = c.parse(ed.text)
        if tree is None:
            return
        starts = c.offsets(ed.text)
        node: Any = next((x for x in ast.walk(tree) if pick_node(x)), None)
        if node is not None:
            ed.replace_span(starts[node.lineno - 1], starts[node.end_lineno or node.lineno], "")


def generate(seed: int, **size: int) -> TaskSpec:
    knobs = c.check_size(FAMILY, size, KNOBS)
    steps = knobs.get("steps", DEFAULTS["steps"])
    batches, filler = steps - 4, knobs.get("filler", DEFAULTS["filler"])
    rng = random.Random(f"{FAMILY}/{seed}")
    callers = knobs.get("callers", 2 * batches + rng.randint(-1, 1))
    if callers < batches:
        raise ValueError(f"task.size.callers must be >= {batches} (one module per batch at steps={steps}), "
                         f"got {callers}")
    n = repo.names(rng)
    pkgs = c.pick(rng, c.PACKAGES, batches)
    counts = c.spread(rng, callers, batches)
    config, script = f"{n.app}/config.py", f"ops/{n.script}.py"
    fx = repo.fixtures(rng, n)
    ops_src, ops_test = repo.ops_script(n)
    scan = [n.app, *pkgs, "docs", "examples"]
    files = {RUNNER_PATH: RUNNER_SOURCE, "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\ntestpaths = tests\n",
             ".gitignore": "__pycache__/\n.pytest_cache/\n", f"{n.app}/__init__.py": f'"""{n.app}."""\n',
             config: repo.config_module(n), "ops/__init__.py": '"""Maintenance scripts."""\n', script: ops_src,
             f"tests/test_{n.script}.py": ops_test, "tools/check_keys.py": repo.tool(n, scan),
             EXAMPLE: repo.dump({"name": "demo", n.old: n.default * 2, "region": "eu"}),
             **{path: repo.dump(cfg) for path, cfg in fx.items()}, **repo.docs(n, pkgs)}
    modules: dict[str, list[str]] = {}
    readers: list[tuple[str, str, str, str]] = []
    for pkg, count in zip(pkgs, counts, strict=True):
        mods, tests, helpers_seen = c.pick(rng, c.MODULES, count), [], []  # type: ignore[var-annotated]
        files[f"{pkg}/__init__.py"] = f'"""The {pkg} package."""\n'
        for mod in mods:
            sib = rng.choice(helpers_seen) if helpers_seen and rng.random() < 0.5 else None
            own = c.fillers(rng, filler, set())
            text, mod_tests, sites = repo.reader_module(rng, n, pkg, mod, rng.randint(1, 3), sib, own)
            files[f"{pkg}/{mod}.py"], tests = text, tests + mod_tests
            helpers_seen += [(mod, name) for name, _ in own]
            readers += [(f"{pkg}/{mod}.py", *site) for site in sites]
        files[f"tests/test_{pkg}.py"] = (f'"""Config readers of the {pkg} package (shipped; read-only)."""\n\n'
                                         f"from {pkg} import {', '.join(mods)}\n\n\n" + "\n\n".join(tests))
        modules[pkg] = [f"{pkg}/{m}.py" for m in mods]
    files["tests/test_fixtures.py"] = repo.fixtures_test(n, fx, rng.sample(readers, min(3, len(readers))))

    last, tidy, docs = c.sid(steps), c.sid(steps - 2), c.sid(steps - 1)
    inv_fallback = Invariant("fixture-fallback", f"{n.app}.{n.smod}.{n.acc} must keep falling back from "
                             f"{n.new!r} to {n.old!r}: stored configurations and the read-only fixtures under "
                             f"fixtures/ still use {n.old!r}, now and after the rename.", f"{TOOL} fallback",
                             stated="s01")
    inv_direct = Invariant("accessor-only", f"Code reads {n.new!r} only through {n.acc}(cfg, {n.new!r}, ...), "
                           f"never cfg[{n.new!r}] or cfg.get({n.new!r}): a direct read misses {n.old!r} in "
                           "stored configurations.", f"{TOOL} direct", stated="s02")
    plan = [Step("s01", f"Add {n.settings} with {n.acc}(), reading {n.new!r} with a fallback to {n.old!r}",
                 f"Create {n.settings} with {n.acc}(cfg, key, default=None): cfg[key] if present, else the value "
                 f"under an older name of the key (an alias table mapping {n.new!r} to {n.old!r}), else default. "
                 f"The shipped fixtures keep {n.old!r} and cannot change; docs/configuration.md describes the key.",
                 (n.settings,), f"{TOOL} settings", (inv_fallback,))]
    meta: c.Meta = {"s01": ("create", (config, DOCS[0]), ())}
    for i, pkg in enumerate(pkgs):
        step = c.sid(2 + i)
        plan.append(Step(step, f"Read {n.new!r} through {n.acc}() in the {pkg} package",
                         f"In {pkg}/, replace every read of {n.old!r} (cfg[{n.old!r}], cfg.get({n.old!r}, d)) by "
                         f"{n.acc}(cfg, {n.new!r}[, d]), importing {n.acc} from {n.app}.{n.smod}.",
                         tuple(modules[pkg]), f"{TOOL} migrated {pkg} && {c.pytest_files([f'tests/test_{pkg}.py'])}",
                         (inv_direct,) if i == 0 else ()))
        meta[step] = ("batch", tuple(modules[pkg]), (pkg,))
    plan += [Step(tidy, f"Add {n.acc}_int() to {n.settings}",
                  f"No package names {n.old!r} any more. Add {n.acc}_int(cfg, key, default=0) to {n.settings}, "
                  f"returning int({n.acc}(cfg, key, default)) (stored configurations may hold strings).",
                  (n.settings,), f"{TOOL} int"),
             Step(docs, f"Rename the key in {' and '.join(DOCS)}",
                  f"Replace {n.old!r} by {n.new!r} everywhere in {', '.join(DOCS)}. The docs describe the shipped "
                  "fixtures too; the check re-runs the fixture tests.", DOCS,
                  f"{TOOL} docs {' '.join(DOCS)} && {c.pytest_files(['tests/test_fixtures.py'])}"),
             Step(last, f"Write {n.new!r} in the config template and the example",
                  f"Make {config}'s template() and {EXAMPLE} use {n.new!r}. Nothing outside {n.settings}, the "
                  f"tests and the fixtures may name {n.old!r} any more: the check lists what is left.",
                  (config, EXAMPLE), f"{TOOL} final && {c.FAST_SUITE}")]
    meta.update({tidy: ("tidy", (n.settings,), ()), docs: ("docs", DOCS, ()),
                 last: ("final", (config, EXAMPLE), ("",))})

    author = rng.choice(c.AUTHORS)
    drift = sorted([
        Drift("d-template", "stale_edit", c.sid(rng.randint(2, steps)), "config: new deployments get a work queue",
              author, ((config, repo.config_module(n, queue=True)), ("tests/test_queue.py", repo.queue_test(n))),
              f"{config} (read at s01, edited at {last}) changes the template line that names {n.old!r}"),
        Drift("d-lint", "tool_change", c.sid(rng.randint(3, steps)), "tools: the key lint covers ops/ too",
              author, (("tools/check_keys.py", repo.tool(n, [*scan, "ops"])),),
              f"`check_keys.py final` now also scans ops/, where {script} still reads {n.old!r}")],
        key=lambda d: d.before_step)
    keep = {"fixture-fallback": f"{n.acc} keeps the fallback to {n.old!r}",
            "accessor-only": f"reads go through {n.acc}()"}
    text = (f"A Python worker service, {n.app}. Configurations are JSON objects ({config}); the packages "
            f"{', '.join(pkgs)} ({callers} modules) read the key {n.old!r} from them. ops/ holds maintenance "
            f"scripts, docs/ and {EXAMPLE} describe the key. tests/, tools/check_keys.py (the project's checks) "
            f"and fixtures/ (stored configurations used as test data) are read-only.\n\nGoal: rename the key "
            f"{n.old!r} to {n.new!r} across code, docs and examples, package by package. The fixtures keep "
            f"{n.old!r}, so reading must fall back to it: add the accessor first, move the readers to it, then "
            f"the docs, and the writers last ({last}).")
    return TaskSpec(
        task_id=task_id(FAMILY, seed, **{k: v for k, v in knobs.items() if DEFAULTS.get(k) != v}),
        family=FAMILY, seed=seed, title=f"Rename the config key {n.old} to {n.new}", text=text,
        files=tuple(sorted(files.items())),
        invariants=(Invariant("readonly", "tests/, tools/, fixtures/ and pytest.ini are shipped read-only: the "
                              f"fixtures keep {n.old!r} for good."),
                    Invariant("same-values", "Every reader returns the same value for the same configuration, "
                              "whichever key name it carries.", c.FAST_SUITE)),
        steps=tuple(plan), final_check=f"{c.SUITE} && {TOOL} final && {TOOL} fallback && {TOOL} direct",
        protected=c.PROTECTED,
        traps=(Trap("old-key-fallback", n.settings, "fixture-fallback",
                    f"the fallback to {n.old!r} in {n.settings} looks dead once no code names {n.old!r}, but the "
                    "read-only fixtures still carry it", docs),),
        drift=tuple(drift), test_command=c.SUITE,
        oracle=Oracle(n, meta, keep, {s.id: tuple(i.text for i in s.establishes) for s in plan}),
        facts=(("plan-shape", f"s01 adds {n.acc} with the fallback, s02-{c.sid(1 + batches)} move one package "
                f"each, {docs} the docs, {last} the template and example; the fallback stays."),))
