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

from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.config_rename import Size, hidden, repo
from tasks.config_rename import drift as drifts
from tasks.config_rename.oracle import DOCS, Oracle
from tasks.spec import Invariant, Step, TaskSpec, Trap

FAMILY = "config_rename"
TOOL = "python3 -B tools/check_keys.py"
EXAMPLE = "examples/deploy.json"


def generate(seed: int, **size: int) -> TaskSpec:
    f = skeleton.frame(FAMILY, seed, size, Size)
    rng, filler, batches = f.rng, f.filler, f.batches
    n = repo.names(rng)
    pkgs = build.pick(rng, build.PACKAGES, batches)
    counts = build.spread(rng, f.callers, batches)
    config, script = f"{n.app}/config.py", f"ops/{n.script}.py"
    fx = repo.fixtures(rng, n)
    ops_src, ops_test = repo.ops_script(n)
    scan = [n.app, *pkgs, "docs", "examples"]
    files = {
        **skeleton.base_files(n.app, f"{n.app}."),
        config: repo.config_module(n),
        "ops/__init__.py": '"""Maintenance scripts."""\n',
        script: ops_src,
        f"tests/test_{n.script}.py": ops_test,
        "tools/check_keys.py": repo.tool(n, scan),
        EXAMPLE: repo.dump({"name": "demo", n.old: n.default * 2, "region": "eu"}),
        **{path: repo.dump(cfg) for path, cfg in fx.items()},
        **repo.docs(n, pkgs),
    }
    readers: list[tuple[str, str, str, str]] = []

    def module(pkg: str, mod: str, sib: tuple[str, str] | None) -> tuple[str, list[str], list[str]]:
        own = build.fillers(rng, filler, set())
        text, tests, sites = repo.reader_module(rng, n, pkg, mod, rng.randint(1, 3), sib, own)
        readers.extend((f"{pkg}/{mod}.py", *site) for site in sites)
        return text, tests, [name for name, _ in own]

    modules = skeleton.packages(
        f, files, pkgs, counts, module, "Config readers of the {pkg} package (shipped; read-only)."
    )
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

    steps, last, tidy, docs = f.steps, f.last, f.tidy, f.docs
    inv_fallback = Invariant(
        "fixture-fallback",
        f"{n.acc} in {n.settings} keeps its fallback from {n.new!r} to "
        f"{n.old!r}: stored configurations and the read-only fixtures under fixtures/ still "
        f"use {n.old!r}, now and after the rename.",
        f"{TOOL} fallback",
        stated="s01",
        anchors=(n.acc, "fallback"),
    )
    inv_direct = Invariant(
        "accessor-only",
        f"Code reads {n.new!r} only through {n.acc}(cfg, {n.new!r}, ...), "
        f"never cfg[{n.new!r}] or cfg.get({n.new!r}): a direct read misses {n.old!r} in "
        "stored configurations.",
        f"{TOOL} direct",
        stated="s02",
        anchors=("only through", n.acc),
    )
    plan = [
        Step(
            "s01",
            f"Add {n.settings} with {n.acc}(), reading {n.new!r} with a fallback to {n.old!r}",
            f"Create {n.settings} with {n.acc}(cfg, key, default=None): cfg[key] if present, else the value "
            f"under an older name of the key (an alias table mapping {n.new!r} to {n.old!r}), else default. "
            f"Keep the fallback in {n.acc} for good: the shipped fixtures keep {n.old!r} and cannot change. "
            "docs/configuration.md describes the key.",
            (n.settings,),
            f"{TOOL} settings",
            (inv_fallback,),
        )
    ]
    meta = f.meta
    meta["s01"] = ("create", (config, DOCS[0]), ())
    plan += [
        skeleton.batch_step(
            f,
            i,
            2,
            pkg,
            modules[i],
            f"Read {n.new!r} through {n.acc}() in the {pkg} package",
            f"In {pkg}/, replace every read of {n.old!r} (cfg[{n.old!r}], cfg.get({n.old!r}, d)) by "
            f"{n.acc}(cfg, {n.new!r}[, d]), importing {n.acc} from {n.app}.{n.smod}.",
            TOOL,
            (inv_direct,) if i == 0 else (),
        )
        for i, pkg in enumerate(pkgs)
    ]
    plan += [
        Step(
            tidy,
            f"Add {n.acc}_int() to {n.settings}",
            f"No package names {n.old!r} any more. Add {n.acc}_int(cfg, key, default=0) to {n.settings}, "
            f"returning int({n.acc}(cfg, key, default)) (stored configurations may hold strings).",
            (n.settings,),
            f"{TOOL} int",
        ),
        Step(
            docs,
            f"Rename the key in {' and '.join(DOCS)}",
            f"Replace {n.old!r} by {n.new!r} everywhere in {', '.join(DOCS)}, and make the table's default "
            f"for the key match what {config}'s template() writes. The docs describe the shipped fixtures "
            "too; the check re-runs the fixture tests.",
            DOCS,
            f"{TOOL} docs {' '.join(DOCS)} && {build.pytest_files(['tests/test_fixtures.py'])}",
        ),
        Step(
            last,
            f"Write {n.new!r} in the config template and the example",
            f"Make {config}'s template() and {EXAMPLE} use {n.new!r}. Nothing outside {n.settings}, the "
            f"tests and the fixtures may name {n.old!r} any more: the check lists what is left.",
            (config, EXAMPLE),
            f"{TOOL} final && {build.FAST_SUITE}",
        ),
    ]
    meta.update(
        {
            tidy: ("tidy", (n.settings,), ()),
            docs: ("docs", (*DOCS, config), ()),
            last: ("final", (config, EXAMPLE), ("",)),
        }
    )

    drifted_fixtures = repo.fixtures_test(n, fx, sampled, drifts.changed_default(n))
    avoid = {early[0], early[1], *(mid[:2] if mid else ())}
    drift, planted = drifts.schedule(
        skeleton.Layout(rng, files, pkgs, modules, avoid, steps), n, drifted_fixtures, scan
    )
    caught = skeleton.batch_of(modules, 2)
    traps = [skeleton.legacy_trap("early-legacy", first, caught)]
    if second:
        traps.append(skeleton.legacy_trap("mid-legacy", second, caught))
    traps.append(
        Trap(
            "old-key-fallback",
            n.settings,
            "fixture-fallback",
            f"the fallback to {n.old!r} in "
            f"{n.settings} looks dead once no code names {n.old!r}, but the read-only fixtures still "
            "carry it",
            docs,
            f"fallback:{n.settings}:{n.acc}",
        )
    )
    if planted:
        traps.append(skeleton.legacy_trap("drift-legacy", planted, caught, "d-legacy"))
    text = (
        f"A Python worker service, {n.app}. Configurations are JSON objects ({config}); the packages "
        f"{', '.join(pkgs)} ({f.callers} modules) read the key {n.old!r} from them. ops/ holds maintenance "
        f"scripts, docs/ and {EXAMPLE} describe the key. tests/, tools/check_keys.py (the project's checks) "
        f"and fixtures/ (stored configurations used as test data) are read-only.\n\nGoal: rename the key "
        f"{n.old!r} to {n.new!r} across code, docs and examples, package by package. The fixtures keep "
        f"{n.old!r}, so reading must fall back to it: add the accessor first, move the readers to it, then "
        f"the docs, and the writers last ({last})."
    )
    legacy = [("early-legacy", first), *([("mid-legacy", second)] if second else [])]
    harmless = skeleton.dead_helper(f, files, modules, drift, traps)
    return skeleton.spec(
        f,
        title=f"Rename the config key {n.old} to {n.new}",
        text=text,
        files=files,
        invariants=(
            Invariant(
                "readonly",
                "tests/, tools/, fixtures/ and pytest.ini are shipped read-only: the "
                f"fixtures keep {n.old!r} for good.",
                anchors=("tools/", "read-only"),
            ),
            Invariant(
                "same-values",
                "Every reader keeps returning the same value for the same configuration, "
                "whichever key name it carries.",
                build.FAST_SUITE,
                anchors=("same value",),
            ),
            *(skeleton.legacy_invariant(iid, p) for iid, p in legacy),
        ),
        steps=plan,
        final_check=f"{build.SUITE} && {TOOL} final && {TOOL} fallback && {TOOL} direct",
        traps=traps,
        drift=drift,
        oracle=Oracle(n, meta),
        harmless=harmless,
        hidden=hidden.checks(n, f.seed),
    )
