"""Family `extract_module`: move a cohesive group of functions into a new package.

`<app>/<util>.py` is a grab-bag; its text helpers move to `<app>/<grp>/<gmod>.py` (exported by
`<app>/<grp>/__init__.py`). The utility module keeps re-export shims while callers' imports
are updated package by package, and the shims go at the last step. Three traps, at three
depths, each a tidy-up that passes the step doing it and fails a later check
(tasks/common/cleanups.py):

  legacy-helper (util)    s02 onwards: a `legacy_*` function in the utility module that nothing
                          visible calls; a later package imports it (plan-time `util-legacy`)
  legacy-helper (caller)  one batch: the same in a caller module (plan-time `shared-legacy`)
  reexport-shims          the tidy step: the shims look dead once every package imports from
                          the new package; the plugin registry names the utility module in
                          "module:attr" strings (`reexport-shims`, stated at s02)

The oracle (oracle.py) computes edits and tidy-ups from perceived text; drift.py has the drift.
"""

from __future__ import annotations

from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.extract_module import Size, hidden, repo
from tasks.extract_module import checktool as checktools
from tasks.extract_module import drift as drifts
from tasks.extract_module.oracle import Oracle
from tasks.spec import Invariant, Step, TaskSpec, Trap

FAMILY = "extract_module"
TOOL = "python3 -B tools/check_imports.py"


def generate(seed: int, **size: int) -> TaskSpec:
    f = skeleton.frame(FAMILY, seed, size, Size)
    rng, filler = f.rng, f.filler
    n = repo.names(rng)
    util, plugins, gdir = n.path(n.util), n.path(n.plugins), f"{n.app}/{n.grp}"
    gmod, helpers, newdoc = f"{gdir}/{n.gmod}.py", n.path(n.helpers), f"docs/{n.grp}.md"
    order = (
        [("g", g) for g in n.group]
        + [("s", s) for s in n.stay]
        + [("f", src) for _, src in build.fillers(rng, filler, set(n.group) | set(n.stay))]
    )
    rng.shuffle(order)
    entries = [(g, g) for g in rng.sample(n.group, 2)] + [(n.stay[0], n.stay[0])]  # key = function name
    files = {
        **skeleton.base_files(n.app, f"{n.app}."),
        util: repo.util_module(n, order, n.h),
        helpers: repo.helpers_module(n),
        plugins: repo.plugins_module(n, entries),
        "tests/test_plugins.py": repo.plugins_test(n, entries, rng),
        f"tests/test_{n.util}.py": repo.util_test(n),
        "tools/check_imports.py": checktools.extract_tool(n),
        **repo.docs(n, entries),
    }
    pkgs = build.pick(rng, build.PACKAGES, f.batches)

    def module(pkg: str, mod: str, sib: tuple[str, str] | None) -> tuple[str, list[str], list[str]]:
        own = build.fillers(rng, filler, set())
        text, tests = repo.caller_module(rng, n, pkg, mod, rng.randint(1, 3), sib, own)
        return text, tests, [name for name, _ in own]

    modules = skeleton.packages(
        f,
        files,
        pkgs,
        build.spread(rng, f.callers, f.batches),
        module,
        "Display helpers of the {pkg} package (shipped; read-only).",
    )
    # Two legacy helpers that look dead where they are edited: one in the utility module (edited
    # at s02), one in a caller module of an early package; each imported by a later package.
    util_importer = rng.choice([m for mods in modules for m in mods])
    in_util = common.plant_legacy(rng, files, util, util_importer, _test_of(util_importer))
    helper_src = in_util.files[util][len(files[util].rstrip("\n")) :]
    files.update(in_util.files)
    pair = common.pick_pair(rng, modules, {util_importer}, range(max(1, f.batches // 2)))
    in_caller = common.plant_legacy(rng, files, pair[0], pair[1], _test_of(pair[1])) if pair else None
    files.update(in_caller.files if in_caller else {})

    steps, last, tidy, docs = f.steps, f.last, f.tidy, f.docs
    inv_cycle = Invariant(
        "no-cycle",
        f"{n.app}.{n.grp} imports its helpers from {helpers}, never from "
        f"{n.app}.{n.util}: the utility module re-exports from {n.app}.{n.grp}, so the other "
        "direction is an import cycle.",
        f"{TOOL} nocycle",
        stated="s01",
        anchors=(f"{n.app}.{n.grp}", "cycle"),
    )
    inv_shims = Invariant(
        "reexport-shims",
        f"The re-export shims in {util} stay until {last}: {plugins} resolves "
        f'formatters from "module:attr" strings naming {n.app}.{n.util}, which no grep for '
        "imports shows.",
        f"{TOOL} reexports",
        last,
        "s02",
        anchors=(util, "re-export"),
    )
    plan = [
        Step(
            "s01",
            f"Create the {n.app}.{n.grp} package with the text helpers",
            f"Create {gmod} holding {', '.join(n.group)}, copied unchanged from {util} together with the "
            f"helper imports they need, and {gdir}/__init__.py exporting them. {util} is not changed yet.",
            (gmod, f"{gdir}/__init__.py"),
            f"{TOOL} package",
            (inv_cycle,),
        ),
        Step(
            "s02",
            f"Replace the moved functions in {util} with re-export shims",
            f"Delete the definitions of {', '.join(n.group)} from {util} and re-export them from "
            f"{n.app}.{n.grp} instead (`from {n.app}.{n.grp} import ...`), so every existing import keeps "
            f"working while callers move in batches. Keep the re-export shims in {util} until {last}: "
            f'{plugins} names {n.app}.{n.util} in "module:attr" strings.',
            (util,),
            f"{TOOL} shims && {build.pytest_files([f'tests/test_{n.util}.py', 'tests/test_plugins.py'])}",
            (inv_shims,),
        ),
    ]
    meta = f.meta
    meta.update(
        {"s01": ("create", (util, helpers), ()), "s02": ("shims", (util, gmod, helpers, plugins), (gdir,))}
    )
    plan += [
        skeleton.batch_step(
            f,
            i,
            3,
            pkg,
            modules[i],
            f"Import the text helpers from {n.app}.{n.grp} in the {pkg} package",
            f"In {pkg}/, import {', '.join(n.group)} from {n.app}.{n.grp} instead of "
            f"{n.app}.{n.util}; other names still come from {n.app}.{n.util}.",
            TOOL,
        )
        for i, pkg in enumerate(pkgs)
    ]
    plan += [
        Step(
            tidy,
            f"Declare what {util} still owns with __all__",
            f"Every package imports the text helpers from {n.app}.{n.grp} now. Add `__all__` to {util}, "
            "listing the functions it defines itself (sorted).",
            (util,),
            f"{TOOL} all && {build.pytest_files([f'tests/test_{n.util}.py'])}",
        ),
        Step(
            docs,
            f"Document {n.app}.{n.grp} in {newdoc}",
            f"Write {newdoc}: the package name and one line per function. docs/plugins.md lists formatters "
            "that use them; the check re-runs the plugin tests.",
            (newdoc,),
            f"{TOOL} docs {newdoc} && {build.pytest_files(['tests/test_plugins.py'])}",
        ),
        Step(
            last,
            f"Point the plugin registry at {n.app}.{n.grp} and delete the shims",
            f"In {plugins}, make every formatter string that names a moved function point at "
            f'{n.app}.{n.grp} (e.g. "{n.app}.{n.grp}:{n.group[0]}"); then delete the re-export shims from '
            f"{util}. No module anywhere may still import a moved name from {n.app}.{n.util}: the check "
            "lists any it finds.",
            (util, plugins),
            f"{TOOL} final && {build.FAST_SUITE}",
        ),
    ]
    meta.update(
        {tidy: ("tidy", (util,), ()), docs: ("docs", (gmod,), ()), last: ("final", (util, plugins), ("",))}
    )

    util_renamed = repo.util_module(n, order, n.h2).rstrip("\n") + helper_src
    drift, planted = drifts.schedule(
        skeleton.Layout(
            rng,
            files,
            pkgs,
            modules,
            {util_importer, *((in_caller.host, in_caller.importer) if in_caller else ())},
            steps,
        ),
        n,
        util_renamed,
        entries,
    )
    caught = skeleton.batch_of(modules, 3)
    traps = [skeleton.legacy_trap("util-legacy", in_util, caught)]
    if in_caller:
        traps.append(skeleton.legacy_trap("shared-legacy", in_caller, caught))
    traps += [
        Trap(
            "string-import",
            util,
            "reexport-shims",
            f"the re-export shims in {util} look unused once every "
            f"package imports from {n.app}.{n.grp}, but {plugins} names {n.app}.{n.util} in strings until "
            f"{last}",
            docs,
            f"reexport-shims:{util}",
        )
    ]
    if planted:
        traps.append(skeleton.legacy_trap("drift-legacy", planted, caught, "d-legacy"))
    text = (
        f"A Python web app, {n.app}. {util} is a grab-bag of text helpers ({', '.join(n.group)}) and number "
        f"helpers ({', '.join(n.stay)}), imported by the packages {', '.join(pkgs)} ({f.callers} modules); "
        f'{plugins} maps report formatter keys to "module:attr" strings. tests/ holds the shipped suite '
        f"and tools/check_imports.py the project's checks; both are read-only.\n\nGoal: move the text "
        f"helpers into a new package {gdir}/ (defined in {gmod}), keep re-export shims in {util} while the "
        f"callers' imports are updated package by package, and delete the shims at the last step ({last})."
    )
    harmless = skeleton.dead_helper(f, files, modules, drift, traps)
    return skeleton.spec(
        f,
        title=f"Extract {n.app}.{n.grp} from {n.app}.{n.util}",
        text=text,
        files=files,
        invariants=(
            Invariant("readonly", skeleton.READONLY, anchors=("tools/", "read-only")),
            Invariant(
                "same-results",
                "Moved functions keep their names and behaviour; every caller gets the same results.",
                build.FAST_SUITE,
                anchors=("names and behaviour",),
            ),
            skeleton.legacy_invariant("util-legacy", in_util),
            *([skeleton.legacy_invariant("shared-legacy", in_caller)] if in_caller else []),
        ),
        steps=plan,
        final_check=f"{build.SUITE} && {TOOL} final && {TOOL} nocycle",
        traps=traps,
        drift=drift,
        oracle=Oracle(n, meta, last),
        harmless=harmless,
        hidden=hidden.checks(n, f.seed),
    )


def _test_of(module: str) -> str:
    return f"tests/test_{module.split('/')[0]}.py"
