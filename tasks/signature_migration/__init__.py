"""Family `signature_migration`: the scenario that motivates ctxbench.

An API `fn(url, t, r)` is called from many modules in several packages. The plan adds a value
object (`P`) in a new module, gives `fn` a compatibility form that accepts both
`fn(url, P(t, r))` and the legacy positional form, migrates the callers package by package,
and deletes the compatibility form only at the last step. The trap: a route table that calls
`fn` by name (`getattr`) with legacy positional arguments, invisible to a grep for `fn(`; it
needs the compatibility form until the last step. A late "tidy" step edits the function, where
deleting the legacy branch looks natural once every visible caller is migrated.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from tasks import task_id
from tasks.common import build as c
from tasks.common.runner import RUNNER_PATH, RUNNER_SOURCE
from tasks.signature_migration import checktool as checktools
from tasks.signature_migration import repo
from tasks.spec import Drift, Edit, Invariant, Step, StepPlan, TaskSpec, Temptation, Trap

FAMILY = "signature_migration"
KNOBS = {"steps": (6, 16), "callers": (1, 64), "filler": (0, 10)}
DEFAULTS = {"steps": 12, "filler": 5}
TOOL = "python3 -B tools/check_api.py"
JOBS = ("nightly", "hourly", "backfill", "warmup", "digest", "reindex", "purge", "rollover")


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
        n, client = self.n, f"{self.n.core}/{self.n.client}.py"
        edits: list[Edit] = []
        temptations: tuple[Temptation, ...] = ()
        if kind == "create":
            path = f"{n.core}/{n.pmod}.py"
            if f"class {n.P}" not in perceived.get(path, ""):
                edits.append(Edit(path, "write", content=repo.policy_module(n)))
        elif kind == "compat":
            ed = c.FileEditor(client, perceived[client])
            c.add_import(ed, f"from {n.core}.{n.pmod} import {n.P}")
            fdef = _function(ed.text, n.fn)
            if fdef is not None and fdef.args.vararg is None:
                lo, hi = c.offsets(ed.text)[fdef.lineno - 1], c.offsets(ed.text)[fdef.end_lineno or fdef.lineno]
                ed.replace_span(lo, hi, repo.compat_function(n, self.last))
            edits += ed.edits
        elif kind == "tidy":
            ed = c.FileEditor(client, perceived[client])
            fdef = _function(ed.text, n.fn)
            if fdef is not None and _function(ed.text, f"{n.fn}_all") is None:
                end = c.offsets(ed.text)[fdef.end_lineno or fdef.lineno]
                ed.replace_span(end, end, "\n\n" + repo.all_function(n))
            edits += ed.edits
            tempt = c.FileEditor(client, ed.text)  # applies after `edits`: the clean-up on top
            _strict(tempt, n)
            if tempt.edits and "compat-form" not in recalled:
                temptations = (Temptation("compat-form", "routed-legacy", tuple(tempt.edits)),)
        elif kind == "docs":
            for path in needs:
                ed = c.FileEditor(path, perceived[path])
                _document(ed, n)
                edits += ed.edits
        if kind == "final":
            router = f"{n.core}/{n.router}.py"
            for path, fix in ((router, _migrate_routes), (client, _strict)):
                ed = c.FileEditor(path, perceived[path])
                fix(ed, n)
                edits += ed.edits
        if kind in ("batch", "final"):  # every legacy call the engineer can see in scope
            for path in sorted(p for p in perceived if c.in_scope(p, scope)):
                ed = c.FileEditor(path, perceived[path])
                _migrate_calls(ed, n)
                edits += ed.edits
        keep = {k: v for k, v in self.keep.items() if not (k == "compat-form" and step_id == self.last)}
        return StepPlan(edits=tuple(edits), temptations=temptations,
                        notes=c.handoff(recalled, keep, f"{step_id}: {kind} done."),
                        invariants=self.establishes.get(step_id, ()))


def _function(text: str, name: str) -> ast.FunctionDef | None:
    tree = c.parse(text)
    return next((d for d in (tree.body if tree else ()) if isinstance(d, ast.FunctionDef) and d.name == name),
                None)


def _legacy(node: ast.AST, n: repo.Names) -> TypeGuard[ast.Call]:
    if not isinstance(node, ast.Call) or len(node.args) != 3:
        return False
    return (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == n.fn


def _migrate_calls(ed: c.FileEditor, n: repo.Names) -> None:
    """fn(url, t, r) -> fn(url, P(t, r)) for every legacy call, plus the import of P."""
    changed = False
    while n.fn in ed.text and (tree := c.parse(ed.text)) is not None:
        starts = c.offsets(ed.text)
        found = []
        for call in (x for x in ast.walk(tree) if _legacy(x, n)):
            func, url, t, r = (c.segment(ed.text, x, starts) for x in (call.func, *call.args))
            found.append((call, f"{func}({url}, {n.P}({t}, {r}))"))
        if not c.replace_nodes(ed, found):
            break
        changed = True
    if changed:
        c.add_import(ed, f"from {n.core}.{n.pmod} import {n.P}")


def _migrate_routes(ed: c.FileEditor, n: repo.Names) -> None:
    """Route entries (module, "fn", (t, r)) -> (module, "fn", (P(t, r),))."""
    changed = False
    while (tree := c.parse(ed.text)) is not None:
        entry: Any = next((e for e in ast.walk(tree) if isinstance(e, ast.Tuple) and len(e.elts) == 3
                      and isinstance(e.elts[1], ast.Constant) and e.elts[1].value == n.fn
                      and isinstance(e.elts[2], ast.Tuple) and len(e.elts[2].elts) == 2), None)
        if entry is None:
            break
        starts = c.offsets(ed.text)
        t, r = (c.segment(ed.text, x, starts) for x in entry.elts[2].elts)
        ed.replace_span(*c.span(ed.text, entry.elts[2], starts), f"({n.P}({t}, {r}),)")
        changed = True
    if changed:
        c.add_import(ed, f"from {n.core}.{n.pmod} import {n.P}")


def _strict(ed: c.FileEditor, n: repo.Names) -> None:
    """Delete the legacy branch of fn and narrow its signature to (url, policy)."""
    fdef = _function(ed.text, n.fn)
    if fdef is None:
        return
    starts = c.offsets(ed.text)
    for node in fdef.body:
        if isinstance(node, ast.If) and "isinstance" in c.segment(ed.text, node.test, starts):
            ed.replace_span(starts[node.lineno - 1], starts[node.end_lineno or node.lineno], "")
            break
    fdef = _function(ed.text, n.fn)
    if fdef is None or len(fdef.args.args) < 2 or (fdef.args.vararg is None and not fdef.args.defaults):
        return
    starts = c.offsets(ed.text)
    line = ed.text[starts[fdef.lineno - 1]:starts[fdef.lineno]]
    m = re.match(r"(\s*def \w+)\((.*)\)(.*)$", line, re.S)
    if m:
        params = ", ".join(a.arg for a in fdef.args.args[:2])
        ed.replace_span(starts[fdef.lineno - 1], starts[fdef.lineno], f"{m.group(1)}({params}){m.group(3)}")


def _document(ed: c.FileEditor, n: repo.Names) -> None:
    new = f"{n.fn}(url, policy)"
    while ed.replace(n.legacy, new):
        pass
    at = ed.text.find(new)
    if f"{n.P}(" not in ed.text and at >= 0:
        pos = ed.text.find("\n", at) + 1 or len(ed.text)
        ed.replace_span(pos, pos, f"`policy` is a `{n.P}({n.t}, {n.r})` from `{n.core}.{n.pmod}`, "
                                  f"e.g. `{n.P}(30, 2)`.\n")


def generate(seed: int, **size: int) -> TaskSpec:
    knobs = c.check_size(FAMILY, size, KNOBS)
    steps = knobs.get("steps", DEFAULTS["steps"])
    batches, filler = steps - 5, knobs.get("filler", DEFAULTS["filler"])
    rng = random.Random(f"{FAMILY}/{seed}")
    callers = knobs.get("callers", 2 * batches + rng.randint(1, 3))
    if callers < batches:
        raise ValueError(f"task.size.callers must be >= {batches} (one module per batch at steps={steps}), "
                         f"got {callers}")
    n = repo.names(rng)
    pkgs = repo.pick_packages(rng, batches)
    counts = c.spread(rng, callers, batches)
    client, router, docpath = f"{n.core}/{n.client}.py", f"{n.core}/{n.router}.py", f"docs/{n.doc}.md"
    routes = [(job, rng.choice(repo.TIMEOUTS), rng.choice(repo.RETRIES)) for job in rng.sample(JOBS, 3)]
    files = {RUNNER_PATH: RUNNER_SOURCE, "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\ntestpaths = tests\n",
             ".gitignore": "__pycache__/\n.pytest_cache/\n", f"{n.core}/__init__.py": '"""Outbound calls."""\n',
             client: repo.client_module(n, rng, filler), router: repo.router_module(n, routes),
             "tests/test_routes.py": repo.routes_test(n, routes), "tools/check_api.py": checktools.sig_tool(n),
             docpath: repo.doc(n, routes)}
    modules: dict[str, list[str]] = {}
    for pkg, count in zip(pkgs, counts, strict=True):
        mods, tests, helpers = repo.pick_modules(rng, count, set()), [], []  # type: ignore[var-annotated]
        files[f"{pkg}/__init__.py"] = f'"""The {pkg} package."""\n'
        for mod in mods:
            sib = rng.choice(helpers) if helpers and rng.random() < 0.5 else None
            text, mod_tests, names = repo.caller_module(rng, n, pkg, mod, rng.randint(1, 2), filler, sib)
            files[f"{pkg}/{mod}.py"], tests = text, tests + mod_tests
            helpers += [(mod, name) for name in names]
        files[f"tests/test_{pkg}.py"] = repo.package_test(pkg, mods, tests)
        modules[pkg] = [f"{pkg}/{m}.py" for m in mods]

    last, tidy, docs = c.sid(steps), c.sid(steps - 2), c.sid(steps - 1)
    inv_policy = Invariant("policy-order", f"{n.P} keeps its fields in the order ({n.t}, {n.r}): the "
                           "compatibility form and the route table build it positionally.",
                           f"{TOOL} policy", stated="s01")
    inv_compat = Invariant("compat-form", f"{n.fn} keeps accepting the legacy form {n.legacy} until {last} "
                           f"deletes it: {router} calls {n.fn} by name with legacy positional arguments, so a "
                           f"grep for `{n.fn}(` does not show every caller.", f"{TOOL} compat", last, "s02")
    plan = [Step("s01", f"Introduce {n.core}/{n.pmod}.py with the {n.P} value object",
                 f"Create {n.core}/{n.pmod}.py with a frozen dataclass {n.P} holding `{n.t}: int` and "
                 f"`{n.r}: int`, in that order. Nothing calls it yet.", (f"{n.core}/{n.pmod}.py",),
                 f"{TOOL} policy", (inv_policy,)),
            Step("s02", f"Give {n.fn} the {n.P} signature, keeping a compatibility form",
                 f"Change {client} so that {n.fn}(url, policy) takes a {n.P}, and keep accepting the legacy "
                 f"form {n.legacy} (e.g. `def {n.fn}(url, policy=None, *legacy)` building the {n.P} from "
                 f"the legacy arguments) so the tree keeps passing while callers migrate in batches. Read "
                 f"{router} too: scheduled jobs reach {n.fn} by name.", (client,),
                 f"{TOOL} compat && {c.pytest_files(['tests/test_routes.py'])}", (inv_compat,))]
    meta: c.Meta = {"s01": ("create", (client,), ()), "s02": ("compat", (client, router), ())}
    for i, pkg in enumerate(pkgs):
        step = c.sid(3 + i)
        plan.append(Step(step, f"Migrate the {pkg} package to {n.fn}(url, {n.P}(...))",
                         f"Rewrite every legacy call {n.legacy} in {pkg}/ as {n.fn}(url, {n.P}({n.t}, {n.r})), "
                         f"importing {n.P} from {n.core}.{n.pmod}. Behaviour must not change.",
                         tuple(modules[pkg]), f"{TOOL} migrated {pkg} && {c.pytest_files([f'tests/test_{pkg}.py'])}"))
        meta[step] = ("batch", tuple(modules[pkg]), (pkg,))
    plan += [Step(tidy, f"Add {n.fn}_all(urls, policy) to {client}",
                  f"Every package calls the {n.P} form now. Add {n.fn}_all(urls, policy) next to {n.fn} in "
                  f"{client}, returning [{n.fn}(url, policy) for url in urls].", (client,),
                  f"{TOOL} all && {c.pytest_files([f'tests/test_{pkgs[-1]}.py'])}"),
             Step(docs, f"Document the {n.P} form in {docpath}",
                  f"Replace the legacy signature in {docpath} with {n.fn}(url, policy) and show how to build "
                  f"a {n.P}(...). The routed jobs listed there must keep working; the check re-runs them.",
                  (docpath,), f"{TOOL} docs {docpath} && {c.pytest_files(['tests/test_routes.py'])}"),
             Step(last, "Migrate the routed jobs and delete the compatibility form",
                  f"In {router}, pass each job's arguments as one {n.P} (e.g. `({n.P}(15, 1),)`); then delete "
                  f"the legacy form from {n.fn}, whose signature becomes {n.fn}(url, policy). No caller "
                  "anywhere may still use the legacy form: the check lists any it finds.", (client, router),
                  f"{TOOL} final && {c.FAST_SUITE}")]
    meta.update({tidy: ("tidy", (client,), ()), docs: ("docs", (docpath,), ()),
                 last: ("final", (client, router), ("",))})

    author = rng.choice(c.AUTHORS)
    stale_routes = [(j, t, r + 1 if k == 0 else r) for k, (j, t, r) in enumerate(routes)]
    stale_routes.append((rng.choice([j for j in JOBS if j not in {x[0] for x in routes}]),
                         rng.choice(repo.TIMEOUTS), rng.choice(repo.RETRIES)))
    new_mod = rng.choice([m for m in repo.MODULES if f"{pkgs[0]}/{m}.py" not in files])
    new_src, new_test = repo.new_caller(n, pkgs[0], new_mod, rng.choice(repo.TIMEOUTS), rng.choice(repo.RETRIES))
    drift = sorted([
        Drift("d-routes", "stale_edit", c.sid(3 + rng.randrange(batches)),
              f"jobs: retry {routes[0][0]} harder, add the {stale_routes[-1][0]} job", author,
              ((router, repo.router_module(n, stale_routes)), ("tests/test_routes.py", repo.routes_test(n, stale_routes))),
              f"{router} (read at s02, edited at {last}) gains a job and a changed entry."),
        Drift("d-caller", "new_caller", c.sid(rng.randint(4, steps - 1)),
              f"{pkgs[0]}: add the {new_mod} health probe", author,
              ((f"{pkgs[0]}/{new_mod}.py", new_src), (f"tests/test_{pkgs[0]}_{new_mod}.py", new_test)),
              f"a new legacy call in {pkgs[0]}/{new_mod}.py, a package already migrated")],
        key=lambda d: d.before_step)
    keep = {"compat-form": f"the legacy form of {n.fn} stays until {last}",
            "policy-order": f"{n.P} fields stay ({n.t}, {n.r})"}
    text = (f"A small Python service. {client} defines {n.legacy}, the one outbound call, used by the "
            f"packages {', '.join(pkgs)} ({callers} modules); {router} runs scheduled jobs through it, "
            f"documented in {docpath}. tests/ holds the shipped suite and tools/check_api.py the project's "
            f"checks; both are read-only.\n\nGoal: move {n.fn} to the signature {n.fn}(url, policy) with a "
            f"{n.P} value object from a new module {n.core}/{n.pmod}.py, without ever breaking the tree: "
            f"add a compatibility form first, migrate the callers package by package, and delete the "
            f"compatibility form only at the last step ({last}).")
    return TaskSpec(
        task_id=task_id(FAMILY, seed, **{k: v for k, v in knobs.items() if DEFAULTS.get(k) != v}),
        family=FAMILY, seed=seed, title=f"Migrate {n.fn} to {n.fn}(url, {n.P})", text=text,
        files=tuple(sorted(files.items())),
        invariants=(Invariant("readonly", "tests/, tools/ and pytest.ini are shipped read-only: change the "
                              "code, never the tests or the checks."),
                    Invariant("same-requests", f"Every caller keeps sending exactly the {n.t} and {n.r} values "
                              "it sends today; only the way they are passed changes.", c.FAST_SUITE)),
        steps=tuple(plan), final_check=f"{c.SUITE} && {TOOL} final && {TOOL} policy", protected=c.PROTECTED,
        traps=(Trap("routed-legacy", client, "compat-form",
                    f"the legacy branch of {n.fn} looks dead once every package is migrated, but {router} "
                    f"still calls {n.fn} by name with ({n.t}, {n.r}) until {last}", docs),),
        drift=tuple(drift), test_command=c.SUITE,
        oracle=Oracle(n, meta, last, keep, {s.id: tuple(i.text for i in s.establishes) for s in plan}),
        facts=(("plan-shape", f"s01 adds {n.P}, s02 the compatibility form, s03-{c.sid(2 + batches)} migrate "
                f"one package each, {last} deletes the compatibility form."),))
