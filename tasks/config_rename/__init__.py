"""Family `config_rename`: rename a configuration key across code, docs and examples.

The shipped fixtures (`fixtures/*.json`) are read-only test data that keep the old key, so
the rename needs a permanent fallback: a new accessor `<acc>(cfg, key, default)` reads the new
key and falls back to the old one. Readers move to the accessor package by package; docs (with
the template's default), the config template and the example follow. Three traps, at three
depths, each a tidy-up that passes the step doing it and fails a later check
(tasks/common/cleanups.py):

  legacy-helper (early)  the first packages: a `legacy_*` function in a reader module that
                         nothing visible calls; a later package imports it (plan-time invariant)
  legacy-helper (mid)    the same, in a middle package
  fallback               the tidy step: once no code names the old key, the fallback looks like
                         dead legacy code; the fixtures still carry it (`fixture-fallback`, s01)

The oracle (oracle.py) computes edits and tidy-ups from perceived text; drift.py has the drift.
"""

from __future__ import annotations

import random

from tasks import task_id
from tasks.common import build as c
from tasks.common import cleanups as common
from tasks.common.runner import RUNNER_PATH, RUNNER_SOURCE
from tasks.config_rename import drift as drifts
from tasks.config_rename import repo
from tasks.config_rename.oracle import DOCS, Oracle
from tasks.spec import Invariant, Step, TaskSpec, Trap

FAMILY = "config_rename"
KNOBS = {"steps": (6, 16), "callers": (1, 64), "filler": (0, 10)}
DEFAULTS = {"steps": 12, "filler": 5}
TOOL = "python3 -B tools/check_keys.py"
EXAMPLE = "examples/deploy.json"


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
    modules: list[list[str]] = []
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
        modules.append([f"{pkg}/{m}.py" for m in mods])
    sampled = rng.sample(readers, min(3, len(readers)))
    files["tests/test_fixtures.py"] = repo.fixtures_test(n, fx, sampled)
    # Two legacy helpers that look dead where they are edited, each imported by a later package.
    third = max(1, batches // 3)
    early = common.pick_pair(rng, modules, set(), range(third))
    assert early, "three packages with a module each always give a pair"
    first = common.plant_legacy(rng, files, early[0], early[1], f"tests/test_{pkgs[early[2]]}.py")
    files.update(first.files)
    mid = common.pick_pair(rng, modules, {early[0], early[1]}, range(third, max(third + 1, batches - 1)))
    second = common.plant_legacy(rng, files, mid[0], mid[1], f"tests/test_{pkgs[mid[2]]}.py") if mid else None
    files.update(second.files if second else {})

    last, tidy, docs = c.sid(steps), c.sid(steps - 2), c.sid(steps - 1)
    inv_fallback = Invariant("fixture-fallback", f"{n.acc} in {n.settings} keeps its fallback from {n.new!r} to "
                             f"{n.old!r}: stored configurations and the read-only fixtures under fixtures/ still "
                             f"use {n.old!r}, now and after the rename.", f"{TOOL} fallback", stated="s01",
                             anchors=(n.acc, "fallback"))
    inv_direct = Invariant("accessor-only", f"Code reads {n.new!r} only through {n.acc}(cfg, {n.new!r}, ...), "
                           f"never cfg[{n.new!r}] or cfg.get({n.new!r}): a direct read misses {n.old!r} in "
                           "stored configurations.", f"{TOOL} direct", stated="s02", anchors=("only through", n.acc))
    plan = [Step("s01", f"Add {n.settings} with {n.acc}(), reading {n.new!r} with a fallback to {n.old!r}",
                 f"Create {n.settings} with {n.acc}(cfg, key, default=None): cfg[key] if present, else the value "
                 f"under an older name of the key (an alias table mapping {n.new!r} to {n.old!r}), else default. "
                 f"Keep the fallback in {n.acc} for good: the shipped fixtures keep {n.old!r} and cannot change. "
                 "docs/configuration.md describes the key.", (n.settings,), f"{TOOL} settings", (inv_fallback,))]
    meta: c.Meta = {"s01": ("create", (config, DOCS[0]), ())}
    for i, pkg in enumerate(pkgs):
        step = c.sid(2 + i)
        plan.append(Step(step, f"Read {n.new!r} through {n.acc}() in the {pkg} package",
                         f"In {pkg}/, replace every read of {n.old!r} (cfg[{n.old!r}], cfg.get({n.old!r}, d)) by "
                         f"{n.acc}(cfg, {n.new!r}[, d]), importing {n.acc} from {n.app}.{n.smod}.",
                         tuple(modules[i]), f"{TOOL} migrated {pkg} && {c.pytest_files([f'tests/test_{pkg}.py'])}",
                         (inv_direct,) if i == 0 else ()))
        meta[step] = ("batch", tuple(modules[i]), (pkg,))
    plan += [Step(tidy, f"Add {n.acc}_int() to {n.settings}",
                  f"No package names {n.old!r} any more. Add {n.acc}_int(cfg, key, default=0) to {n.settings}, "
                  f"returning int({n.acc}(cfg, key, default)) (stored configurations may hold strings).",
                  (n.settings,), f"{TOOL} int"),
             Step(docs, f"Rename the key in {' and '.join(DOCS)}",
                  f"Replace {n.old!r} by {n.new!r} everywhere in {', '.join(DOCS)}, and make the table's default "
                  f"for the key match what {config}'s template() writes. The docs describe the shipped fixtures "
                  "too; the check re-runs the fixture tests.", DOCS,
                  f"{TOOL} docs {' '.join(DOCS)} && {c.pytest_files(['tests/test_fixtures.py'])}"),
             Step(last, f"Write {n.new!r} in the config template and the example",
                  f"Make {config}'s template() and {EXAMPLE} use {n.new!r}. Nothing outside {n.settings}, the "
                  f"tests and the fixtures may name {n.old!r} any more: the check lists what is left.",
                  (config, EXAMPLE), f"{TOOL} final && {c.FAST_SUITE}")]
    meta.update({tidy: ("tidy", (n.settings,), ()), docs: ("docs", (*DOCS, config), ()),
                 last: ("final", (config, EXAMPLE), ("",))})

    drifted_fixtures = repo.fixtures_test(n, fx, sampled, drifts.changed_default(n))
    avoid = {early[0], early[1], *(mid[:2] if mid else ())}
    drift, planted = drifts.schedule(rng, n, files, drifted_fixtures, scan, pkgs, modules, avoid, steps)
    caught = {m: c.sid(2 + i) for i, mods in enumerate(modules) for m in mods}
    traps = [Trap("early-legacy", first.host, "early-legacy", f"{first.name} looks dead in {first.host}, but "
                  f"{first.importer} imports it", caught[first.importer], first.key)]
    if second:
        traps.append(Trap("mid-legacy", second.host, "mid-legacy", f"{second.name} looks dead in {second.host}, "
                          f"but {second.importer} imports it", caught[second.importer], second.key))
    traps.append(Trap("old-key-fallback", n.settings, "fixture-fallback", f"the fallback to {n.old!r} in "
                      f"{n.settings} looks dead once no code names {n.old!r}, but the read-only fixtures still "
                      "carry it", docs, f"fallback:{n.settings}:{n.acc}"))
    if planted:
        traps.append(Trap("drift-legacy", planted.host, "", f"{planted.name} looks dead in {planted.host}, but "
                          f"{planted.importer} imports it (said only by the d-legacy commit)",
                          caught[planted.importer], planted.key, "d-legacy"))
    text = (f"A Python worker service, {n.app}. Configurations are JSON objects ({config}); the packages "
            f"{', '.join(pkgs)} ({callers} modules) read the key {n.old!r} from them. ops/ holds maintenance "
            f"scripts, docs/ and {EXAMPLE} describe the key. tests/, tools/check_keys.py (the project's checks) "
            f"and fixtures/ (stored configurations used as test data) are read-only.\n\nGoal: rename the key "
            f"{n.old!r} to {n.new!r} across code, docs and examples, package by package. The fixtures keep "
            f"{n.old!r}, so reading must fall back to it: add the accessor first, move the readers to it, then "
            f"the docs, and the writers last ({last}).")
    legacy = [("early-legacy", first), *([("mid-legacy", second)] if second else [])]
    return TaskSpec(
        task_id=task_id(FAMILY, seed, **{k: v for k, v in knobs.items() if DEFAULTS.get(k) != v}),
        family=FAMILY, seed=seed, title=f"Rename the config key {n.old} to {n.new}", text=text,
        files=tuple(sorted(files.items())),
        invariants=(Invariant("readonly", "tests/, tools/, fixtures/ and pytest.ini are shipped read-only: the "
                              f"fixtures keep {n.old!r} for good.", anchors=("tools/", "read-only")),
                    Invariant("same-values", "Every reader keeps returning the same value for the same configuration, "
                              "whichever key name it carries.", c.FAST_SUITE, anchors=("same value",)),
                    *(Invariant(iid, f"{p.name} in {p.host} stays although nothing there calls it: {p.importer} "
                                "imports it.", f"python3 -B -c 'from {p.dotted(p.host)} import {p.name}'",
                                anchors=(p.name,)) for iid, p in legacy)),
        steps=tuple(plan), final_check=f"{c.SUITE} && {TOOL} final && {TOOL} fallback && {TOOL} direct",
        protected=c.PROTECTED, traps=tuple(traps), drift=drift, test_command=c.SUITE, oracle=Oracle(n, meta))
