"""Family `signature_migration`: the scenario that motivates ctxbench.

An API `fn(url, t, r)` is called from many modules in several packages. The plan adds a value
object (`P`) in a new module, gives `fn` a compatibility form that accepts both
`fn(url, P(t, r))` and the legacy positional form, migrates the callers package by package,
documents the new form and the routed jobs, and deletes the compatibility form at the last
step. Three traps, at three depths, each a tidy-up that passes the step doing it and fails a
later check (tasks/common/cleanups.py):

  inline-send     s02 onwards: `_send`, called once in the client, looks inlinable; a shipped
                  test imports it (plan-time invariant `send-helper`; caught at the last step)
  fold-constants  one batch: a module's (duration, count) constants look foldable into one
                  `P`; a later package imports one (plan-time `shared-constants`)
  legacy-form     the tidy step: the legacy branch of `fn` looks dead once every package is
                  migrated; the route table calls `fn` by name (`compat-form`, stated at s02)

The oracle (oracle.py) computes edits and tidy-ups from perceived text; drift.py has the drift.
"""

from __future__ import annotations

import random

from tasks.common import build, skeleton
from tasks.signature_migration import Size, hidden, repo
from tasks.signature_migration import checktool as checktools
from tasks.signature_migration import drift as drifts
from tasks.signature_migration.oracle import Oracle
from tasks.spec import Invariant, Step, TaskSpec, Trap

FAMILY = "signature_migration"
TOOL = "python3 -B tools/check_api.py"
JOBS = ("nightly", "hourly", "backfill", "warmup", "digest", "reindex", "purge", "rollover")


def generate(seed: int, **size: int) -> TaskSpec:
    f = skeleton.frame(FAMILY, seed, size, Size)
    rng, filler, batches, steps = f.rng, f.filler, f.batches, f.steps
    n = repo.names(rng)
    pkgs = repo.pick_packages(rng, batches)
    counts = build.spread(rng, f.callers, batches)
    client, router, docpath = f"{n.core}/{n.client}.py", f"{n.core}/{n.router}.py", f"docs/{n.doc}.md"
    routes = [(job, rng.choice(repo.TIMEOUTS), rng.choice(repo.RETRIES)) for job in rng.sample(JOBS, 3)]
    files = {
        **skeleton.base_files(n.core, "Outbound calls."),
        client: repo.client_module(n, rng, filler),
        router: repo.router_module(n, routes),
        "tests/test_routes.py": repo.routes_test(n, routes),
        "tests/test_transport.py": repo.transport_test(n),
        "tools/check_api.py": checktools.sig_tool(n),
        docpath: repo.doc(n, routes),
    }
    host_pkg = rng.randrange(max(1, batches // 2))  # the shared-constants trap: an early package
    shared = batches > 1 or counts[0] > 1  # a module to import the constants from elsewhere exists
    consts: list[tuple[str, str]] = []  # the (duration, count) constants of the host module, once made
    started: set[str] = set()  # packages whose first module is made

    def module(pkg: str, mod: str, sib: tuple[str, str] | None) -> tuple[str, list[str], list[str]]:
        first = shared and pkg == pkgs[host_pkg] and pkg not in started
        started.add(pkg)
        text, tests, names, named = repo.caller_module(
            rng, n, pkg, mod, rng.randint(1, 2), filler, sib, consts=first
        )
        consts.extend([named] if named else [])
        return text, tests, names

    modules = skeleton.packages(
        f,
        files,
        pkgs,
        counts,
        module,
        "Requests sent by the {pkg} package (shipped with the task; read-only).",
    )
    host = modules[host_pkg][0]
    j = rng.randrange(host_pkg + 1, batches) if batches > 1 else 0
    importer = rng.choice([m for m in modules[j] if m != host] or [host])
    if consts:
        _plant_constant_user(rng, n, files, host, consts[0][0], importer, f"tests/test_{pkgs[j]}.py")

    last, tidy, docs = f.last, f.tidy, f.docs
    inv_policy = Invariant(
        "policy-order",
        f"{n.P} keeps its fields in the order ({n.t}, {n.r}): the "
        "compatibility form and the route table build it positionally.",
        f"{TOOL} policy",
        stated="s01",
        anchors=(n.P, "order"),
    )
    inv_compat = Invariant(
        "compat-form",
        f"{n.fn} keeps accepting the legacy form {n.legacy} until {last} "
        f"deletes it: {router} calls {n.fn} by name with legacy positional arguments, so a "
        f"grep for `{n.fn}(` does not show every caller.",
        f"{TOOL} compat",
        last,
        "s02",
        anchors=(n.fn, "legacy form"),
    )
    plan = [
        Step(
            "s01",
            f"Introduce {n.core}/{n.pmod}.py with the {n.P} value object",
            f"Create {n.core}/{n.pmod}.py with a frozen dataclass {n.P} holding `{n.t}: int` and "
            f"`{n.r}: int`, in that order. Nothing calls it yet.",
            (f"{n.core}/{n.pmod}.py",),
            f"{TOOL} policy",
            (inv_policy,),
        ),
        Step(
            "s02",
            f"Give {n.fn} the {n.P} signature, keeping a compatibility form",
            f"Change {client} so that {n.fn}(url, policy) takes a {n.P}, building the {n.P} from the legacy "
            f"arguments when called the old way (e.g. `def {n.fn}(url, policy=None, *legacy)`), so the tree "
            f"keeps passing while callers migrate in batches. Keep accepting the legacy form {n.legacy} until "
            f"{last}: {router} calls {n.fn} by name with legacy positional arguments.",
            (client,),
            f"{TOOL} compat && {build.pytest_files(['tests/test_routes.py'])}",
            (inv_compat,),
        ),
    ]
    meta = f.meta
    meta.update({"s01": ("create", (client,), ()), "s02": ("compat", (client, router), ())})
    plan += [
        skeleton.batch_step(
            f,
            i,
            3,
            pkg,
            modules[i],
            f"Migrate the {pkg} package to {n.fn}(url, {n.P}(...))",
            f"Rewrite every legacy call {n.legacy} in {pkg}/ as {n.fn}(url, {n.P}({n.t}, {n.r})), "
            f"importing {n.P} from {n.core}.{n.pmod}. Behaviour must not change.",
            TOOL,
        )
        for i, pkg in enumerate(pkgs)
    ]
    plan += [
        Step(
            tidy,
            f"Add {n.fn}_all(urls, policy) to {client}",
            f"Every package calls the {n.P} form now. Add {n.fn}_all(urls, policy) next to {n.fn} in "
            f"{client}, returning [{n.fn}(url, policy) for url in urls].",
            (client,),
            f"{TOOL} all && {build.pytest_files([f'tests/test_{pkgs[-1]}.py'])}",
        ),
        Step(
            docs,
            f"Document the {n.P} form and the routed jobs in {docpath}",
            f"Replace the legacy signature in {docpath} with {n.fn}(url, policy), show how to build a "
            f"{n.P}(...), and list each routed job of {router} as `job`: {n.P}({n.t}, {n.r}) with the values "
            f"the router passes. The check compares the list with {router} and re-runs the routed jobs.",
            (docpath,),
            f"{TOOL} docs {docpath} && {build.pytest_files(['tests/test_routes.py'])}",
        ),
        Step(
            last,
            "Migrate the routed jobs and delete the compatibility form",
            f"In {router}, pass each job's arguments as one {n.P} (e.g. `({n.P}(15, 1),)`); then delete "
            f"the legacy form from {n.fn}, whose signature becomes {n.fn}(url, policy). No caller "
            "anywhere may still use the legacy form: the check lists any it finds.",
            (client, router),
            f"{TOOL} final && {build.FAST_SUITE}",
        ),
    ]
    meta.update(
        {
            tidy: ("tidy", (client,), ()),
            docs: ("docs", (docpath, router), ()),
            last: ("final", (client, router), ("",)),
        }
    )

    drift, planted = drifts.schedule(
        skeleton.Layout(rng, files, pkgs, modules, {host, importer}, steps), n, routes, JOBS
    )
    caught = skeleton.batch_of(modules, 3)
    traps = [
        Trap(
            "inline-send",
            client,
            "send-helper",
            f"_send looks inlinable into {n.fn}, its one visible "
            "caller, but tests/test_transport.py imports it",
            last,
            f"inline-send:{client}",
        )
    ]
    const = consts[0] if consts else None
    if const:
        traps.append(
            Trap(
                "shared-constants",
                host,
                "shared-constants",
                f"{const[0]} and {const[1]} look foldable into one {n.P}, but {importer} imports {const[0]}",
                caught[importer],
                f"fold-constants:{host}:{const[0][: -len(n.t) - 1]}",
            )
        )
    traps += [
        Trap(
            "routed-legacy",
            client,
            "compat-form",
            f"the legacy branch of {n.fn} looks dead once every "
            f"package is migrated, but {router} still calls {n.fn} by name with ({n.t}, {n.r}) until {last}",
            docs,
            f"legacy-form:{client}:{n.fn}",
        )
    ]
    if planted:
        traps.append(skeleton.legacy_trap("drift-legacy", planted, caught, "d-legacy"))
    text = (
        f"A small Python service. {client} defines {n.legacy}, the one outbound call, used by the "
        f"packages {', '.join(pkgs)} ({f.callers} modules); {router} runs scheduled jobs through it, "
        f"documented in {docpath}. tests/ holds the shipped suite and tools/check_api.py the project's "
        f"checks; both are read-only.\n\nGoal: move {n.fn} to the signature {n.fn}(url, policy) with a "
        f"{n.P} value object from a new module {n.core}/{n.pmod}.py, without ever breaking the tree: "
        f"add a compatibility form first, migrate the callers package by package, and delete the "
        f"compatibility form at the last step ({last})."
    )
    harmless = skeleton.dead_helper(f, files, modules, drift, traps)
    return skeleton.spec(
        f,
        title=f"Migrate {n.fn} to {n.fn}(url, {n.P})",
        text=text,
        files=files,
        invariants=(
            Invariant("readonly", skeleton.READONLY, anchors=("tools/", "read-only")),
            Invariant(
                "same-requests",
                f"Every caller keeps sending exactly the {n.t} and {n.r} values "
                "it sends today; only the way they are passed changes.",
                build.FAST_SUITE,
                anchors=("keeps sending",),
            ),
            Invariant(
                "send-helper",
                f"{client}'s _send stays a module-level function taking (url, {n.t}, "
                f"{n.r}): tests/test_transport.py imports it, so never inline it into {n.fn}.",
                f"{TOOL} send",
                anchors=("_send",),
            ),
            *(
                [
                    Invariant(
                        "shared-constants",
                        f"{host}'s {const[0]} and {const[1]} stay module-level "
                        f"constants: {importer} imports {const[0]}, so never fold them into a {n.P}.",
                        f"python3 -B -c 'from {host[:-3].replace('/', '.')} import {', '.join(const)}'",
                        anchors=(const[0],),
                    )
                ]
                if const
                else []
            ),
        ),
        steps=plan,
        final_check=f"{build.SUITE} && {TOOL} final && {TOOL} policy && {TOOL} send",
        traps=traps,
        drift=drift,
        oracle=Oracle(n, meta),
        harmless=harmless,
        hidden=hidden.checks(n, f.seed),
    )


def _plant_constant_user(
    rng: random.Random,
    n: repo.Names,
    files: dict[str, str],
    host: str,
    const: str,
    importer: str,
    test_path: str,
) -> None:
    """`importer` reads `const` from `host` and passes it to a legacy call; its package test pins it."""
    value = int(
        next(line.split("=")[1] for line in files[host].splitlines() if line.startswith(f"{const} ="))
    )
    r = rng.choice(repo.RETRIES)
    call = n.fn if f"from {n.core}.{n.client} import {n.fn}" in files[importer] else f"{n.client}.{n.fn}"
    line, func, name = repo.constant_user(n, host, const, r, call)
    ed = build.FileEditor(importer, files[importer])
    build.add_import(ed, line)
    files[importer] = ed.text.rstrip("\n") + "\n\n\n" + func
    mod = importer.rsplit("/", 1)[1][:-3]
    want = repo.sent(n, f"h/{const.split('_', 1)[0].lower()}/window", value, r)
    files[test_path] = (
        files[test_path].rstrip("\n") + "\n\n\n" + f"def test_{mod}_{name}():\n    got = {mod}.{name}"
        f'("h")\n    assert got == {want!r}, "{importer}: {name} sends a different request: " + repr(got)\n'
    )
