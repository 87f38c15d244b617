"""Repository text for `signature_migration`: the seeded names and every file of the base
tree (code, shipped tests, the project's check tool, docs), plus the drift commits' files.

The text is in tasks/signature_migration/templates/; here every seeded value is drawn, in a
fixed order, and handed to a template.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tasks.common.build import FIELDS, PACKAGES, RESOURCES, caller_text, count_rows, fillers, pick, site_name
from tasks.common.render import render, snippet

FUNCTIONS, CALLERS, TESTS = (
    "signature_migration/functions.py.j2",
    "signature_migration/callers.py.j2",
    "signature_migration/tests.py.j2",
)


@dataclass(frozen=True)
class Names:
    core: str  # the package that owns the API
    client: str  # module of the API: <core>/<client>.py
    fn: str  # the API function
    t: str  # first legacy parameter (a duration)
    r: str  # second legacy parameter (a count)
    pmod: str  # new module: <core>/<pmod>.py
    P: str  # the new value object
    router: str  # <core>/<router>.py: the name-routed caller (the trap)
    route_fn: str
    verb: str
    doc: str  # docs/<doc>.md

    @property
    def legacy(self) -> str:
        return f"{self.fn}(url, {self.t}, {self.r})"


def names(rng: random.Random) -> Names:
    fn, verb = rng.choice(
        (
            ("fetch", "GET"),
            ("pull", "GET"),
            ("retrieve", "GET"),
            ("publish", "POST"),
            ("submit", "POST"),
            ("query", "GET"),
            ("push", "PUT"),
        )
    )
    t, r = rng.choice(
        (
            ("timeout", "retries"),
            ("deadline", "attempts"),
            ("timeout_s", "max_tries"),
            ("ttl", "tries"),
            ("wait_s", "retry_limit"),
        )
    )
    P, pmod = rng.choice(
        (
            ("Policy", "policy"),
            ("CallPolicy", "policies"),
            ("RetryPolicy", "retry"),
            ("CallOptions", "options"),
            ("Limits", "limits"),
        )
    )
    return Names(
        core=rng.choice(("wire", "netcore", "outbound", "remote", "gateway", "connectors")),
        client=rng.choice(("client", "transport", "calls", "remote_api")),
        fn=fn,
        t=t,
        r=r,
        pmod=pmod,
        P=P,
        router=rng.choice(("routes", "registry", "handlers", "jobtable")),
        route_fn=rng.choice(("dispatch", "run_route", "invoke", "run_job")),
        verb=verb,
        doc=rng.choice(("client", "calls", "transport", "remote")),
    )


def sent(n: Names, url: str, t: int, r: int) -> str:
    return f"{n.verb} {url} {n.t}={t} {n.r}={r}"


TIMEOUTS, RETRIES = (5, 10, 15, 20, 30, 45, 60, 90), (1, 2, 3, 4, 5, 6)
_CALLS = ("load", "pull", "refresh", "poll", "mirror", "probe", "read", "scan")


def caller_module(
    rng: random.Random,
    n: Names,
    pkg: str,
    mod: str,
    sites: int,
    filler: int,
    sibling: tuple[str, str] | None,
    consts: bool = False,
) -> tuple[str, list[str], list[str], tuple[str, str] | None]:
    """One caller module, its test functions, its filler helpers' names and, with `consts`, the
    names of the module-level (duration, count) constants its first call passes (no other
    module has such constants: they are the shared-constants trap).
    `sibling`: the (module, helper) of the same package it imports: the package's call graph."""
    attr = rng.random() < 0.3  # `from core import client` + `client.fn(...)` instead of `fn(...)`
    call = f"{n.client}.{n.fn}" if attr else n.fn
    head = [f'"""{pkg.capitalize()} {mod}: remote calls and row helpers for the {mod} job."""', ""]
    head.append(f"from {n.core} import {n.client}" if attr else f"from {n.core}.{n.client} import {n.fn}")
    if sibling:
        head.append(f"from {pkg}.{sibling[0]} import {sibling[1]}")
    defined, bodies, tests = [], [], []
    taken: set[str] = set()
    named: tuple[str, str] | None = None
    for k, res in enumerate(rng.sample(RESOURCES, sites)):
        t, r, form = rng.choice(TIMEOUTS), rng.choice(RETRIES), rng.randrange(3)
        form = 3 if consts and k == 0 else form
        func = site_name(rng, _CALLS, res, taken)
        ct = cr = ""
        if form == 0:
            args, want = '"h"', repr(sent(n, f"h/{res}", t, r))
        elif form == 1:
            args, want = '"h", 7', repr(sent(n, f"h/{res}/7", t, r))
        elif form == 2:
            want = repr([sent(n, f"h/{res}/{i}", t, r) for i in (1, 2)])
            args = '"h", [1, 2]'
        else:
            ct, cr = f"{res.upper()}_{n.t.upper()}", f"{res.upper()}_{n.r.upper()}"
            defined += [f"{ct} = {t}", f"{cr} = {r}"]
            named = (ct, cr)
            args, want = '"h"', repr({res: sent(n, f"h/{res}/feed", t, r)})
        bodies.append(snippet(CALLERS, "site", form, func, call, res, t, r, ct, cr))
        tests.append(snippet(TESTS, "site_test", pkg, mod, func, args, want))
    helpers = fillers(rng, filler, taken)
    for _name, src in helpers:
        bodies.insert(rng.randint(0, len(bodies)), src)
    if sibling:
        fld = rng.choice(FIELDS)
        bodies.append(
            count_rows(f"count_{fld}_rows", f"How many rows the {sibling[0]} helper keeps.", sibling[1])
        )
    text = caller_text(head + ["", *defined] if defined else head, bodies)  # the constants under the imports
    return text, tests, [name for name, _ in helpers], named


def client_module(n: Names, rng: random.Random, filler: int) -> str:
    helpers = fillers(rng, filler, {n.fn, "_send"})
    return render("signature_migration/client.py.j2", n=n, fillers=[src for _, src in helpers])


def router_module(n: Names, routes: list[tuple[str, int, int]]) -> str:
    return render("signature_migration/router.py.j2", n=n, routes=routes)


def routes_test(n: Names, routes: list[tuple[str, int, int]]) -> str:
    return snippet(TESTS, "routes_test", n, [(job, sent(n, "h", t, r)) for job, t, r in routes])


ROUTED = "## Routed jobs"


def doc(n: Names, routes: list[tuple[str, int, int]]) -> str:
    return render("signature_migration/docs.md.j2", n=n, heading=ROUTED, routes=routes)


def routed_section(n: Names, routes: list[tuple[str, int, int]], legacy: bool = False) -> str:
    """The docs' list of routed jobs: legacy `t=.., r=..` at first, `P(t, r)` once documented."""
    return snippet(FUNCTIONS, "routed_section", n, ROUTED, routes, legacy)


def transport_test(n: Names) -> str:
    return snippet(TESTS, "transport_test", n, sent(n, "h/x", 7, 2))


def constant_user(n: Names, host: str, const: str, r: int, call: str) -> tuple[str, str, str]:
    """(import line, function, its name) for a module that reads `const` from `host` and passes it
    to `call` (the API as that module spells it)."""
    res = const.split("_", 1)[0].lower()
    mod = host.removesuffix(".py").replace("/", ".")
    t = f"window_{res}"
    return (
        f"from {mod} import {const}",
        snippet(FUNCTIONS, "constant_user", n, t, res, mod, call, const, r),
        t,
    )


def written(name: str, n: Names, *args: object) -> str:
    """The code a step's edit writes (the oracle's): macro `name` of functions.py.j2."""
    return snippet(FUNCTIONS, name, n, *args)


def new_caller(n: Names, pkg: str, mod: str, t: int, r: int) -> tuple[str, str]:
    """A colleague's new module (still on the legacy form) and its test."""
    return (
        snippet(FUNCTIONS, "new_caller", n, pkg, mod, t, r),
        snippet(TESTS, "new_caller_test", pkg, mod, sent(n, "h/health", t, r)),
    )


def pick_packages(rng: random.Random, k: int) -> list[str]:
    return pick(rng, PACKAGES, k)
