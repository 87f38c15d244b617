"""Repository text for `signature_migration`: the seeded names and every file of the base
tree (code, shipped tests, the project's check tool, docs), plus the drift commits' files.

Kept apart from the plan (`__init__`), the oracle and the drift because it is pure templating.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tasks.common.build import FIELDS, PACKAGES, RESOURCES, fillers, pick


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
    fn, verb = rng.choice((("fetch", "GET"), ("pull", "GET"), ("retrieve", "GET"), ("publish", "POST"),
                           ("submit", "POST"), ("query", "GET"), ("push", "PUT")))
    t, r = rng.choice((("timeout", "retries"), ("deadline", "attempts"), ("timeout_s", "max_tries"),
                       ("ttl", "tries"), ("wait_s", "retry_limit")))
    P, pmod = rng.choice((("Policy", "policy"), ("CallPolicy", "policies"), ("RetryPolicy", "retry"),
                          ("CallOptions", "options"), ("Limits", "limits")))
    return Names(core=rng.choice(("wire", "netcore", "outbound", "remote", "gateway", "connectors")),
                 client=rng.choice(("client", "transport", "calls", "remote_api")), fn=fn, t=t, r=r,
                 pmod=pmod, P=P, router=rng.choice(("routes", "registry", "handlers", "jobtable")),
                 route_fn=rng.choice(("dispatch", "run_route", "invoke", "run_job")), verb=verb,
                 doc=rng.choice(("client", "calls", "transport", "remote")))


def sent(n: Names, url: str, t: int, r: int) -> str:
    return f"{n.verb} {url} {n.t}={t} {n.r}={r}"


TIMEOUTS, RETRIES = (5, 10, 15, 20, 30, 45, 60, 90), (1, 2, 3, 4, 5, 6)
_CALLS = ("load", "pull", "refresh", "poll", "mirror", "probe", "read", "scan")


def caller_module(rng: random.Random, n: Names, pkg: str, mod: str, sites: int, filler: int,
                  sibling: tuple[str, str] | None, consts: bool = False
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
        func = f"{rng.choice(_CALLS)}_{res}"
        while func in taken:
            func = f"{rng.choice(_CALLS)}_{res}"
        taken.add(func)
        if form == 0:
            body = f'    """Every {res} record from `host`."""\n    return {call}(host + "/{res}", {t}, {r})\n'
            args, want = '"h"', repr(sent(n, f"h/{res}", t, r))
            params = "host"
        elif form == 1:
            body = (f'    """One {res} record by id."""\n    url = f"{{host}}/{res}/{{ident}}"\n'
                    f"    return {call}(url, {t}, {r})\n")
            args, want, params = '"h", 7', repr(sent(n, f"h/{res}/7", t, r)), "host, ident"
        elif form == 2:
            body = (f'    """The {res} records in `ids`, in order."""\n'
                    f'    return [{call}(f"{{host}}/{res}/{{i}}", {t}, {r}) for i in ids]\n')
            want = repr([sent(n, f"h/{res}/{i}", t, r) for i in (1, 2)])
            args, params = '"h", [1, 2]', "host, ids"
        else:
            ct, cr = f"{res.upper()}_{n.t.upper()}", f"{res.upper()}_{n.r.upper()}"
            defined += [f"{ct} = {t}", f"{cr} = {r}"]
            named = (ct, cr)
            body = (f'    """The {res} feed, keyed for the export."""\n'
                    f'    body = {call}(host + "/{res}/feed", {ct}, {cr})\n    return {{"{res}": body}}\n')
            args, want, params = '"h"', repr({res: sent(n, f"h/{res}/feed", t, r)}), "host"
        bodies.append(f"def {func}({params}):\n{body}")
        tests.append(f"def test_{mod}_{func}():\n    got = {mod}.{func}({args})\n"
                     f'    assert got == {want}, "{pkg}/{mod}.py: {func} sends a different request: " + repr(got)\n')
    helpers = fillers(rng, filler, taken)
    for _name, src in helpers:
        bodies.insert(rng.randint(0, len(bodies)), src)
    if sibling:
        fld = rng.choice(FIELDS)
        bodies.append(f'def count_{fld}_rows(rows):\n    """How many rows the {sibling[0]} helper keeps."""\n'
                      f"    return len({sibling[1]}(rows))\n")
    text = ("\n".join(head) + "\n\n" + ("\n".join(defined) + "\n\n" if defined else "") + "\n"
            + "\n\n\n".join(b.rstrip("\n") for b in bodies) + "\n")
    return text, tests, [name for name, _ in helpers], named


def client_module(n: Names, rng: random.Random, filler: int) -> str:
    extra = "".join("\n\n" + src for _, src in fillers(rng, filler, {n.fn, "_send"}))
    return (f'"""Outbound calls for every package of the service.\n\n`{n.fn}` is the single entry point. '
            f"`_send` formats the request line that the\nin-memory transport records: the service never "
            f'opens a socket in tests.\n"""\n\nVERB = "{n.verb}"\n\n\n'
            f'def _send(url, {n.t}, {n.r}):\n    """The transport\'s log line for one request."""\n'
            f'    return f"{{VERB}} {{url}} {n.t}={{{n.t}}} {n.r}={{{n.r}}}"\n\n\n'
            f"def {n.fn}(url, {n.t}, {n.r}):\n"
            f'    """{n.fn.capitalize()} `url`: up to `{n.r}` attempts, each bounded by `{n.t}` seconds."""\n'
            f"    return _send(url, {n.t}, {n.r})\n{extra}")


def router_module(n: Names, routes: list[tuple[str, int, int]]) -> str:
    table = "".join(f'    "{job}": ("{n.core}.{n.client}", "{n.fn}", ({t}, {r})),\n' for job, t, r in routes)
    return (f'"""Named handlers for scheduled jobs.\n\nJobs are configured by name (see docs/{n.doc}.md). '
            "Each route names a module, a callable\nand the positional arguments passed after the URL; "
            f'the callable is looked up\nat run time, so adding a job never touches this code.\n"""\n\n'
            f"import importlib\n\nROUTES = {{\n{table}}}\n\n\n"
            f'def {n.route_fn}(name, url):\n    """Run the handler registered under `name` for `url`."""\n'
            "    module, attr, args = ROUTES[name]\n"
            "    handler = getattr(importlib.import_module(module), attr)\n    return handler(url, *args)\n")


def routes_test(n: Names, routes: list[tuple[str, int, int]]) -> str:
    body = "".join(f'\n\ndef test_route_{job}():\n    got = {n.route_fn}("{job}", "h")\n'
                   f'    assert got == {sent(n, "h", t, r)!r}, "{n.core}/{n.router}.py: route {job} sent " + repr(got)\n'
                   for job, t, r in routes)
    return (f'"""Jobs reach {n.fn} by name through {n.core}/{n.router}.py (shipped; read-only)."""\n\n'
            f"from {n.core}.{n.router} import {n.route_fn}\n{body}")


ROUTED = "## Routed jobs"


def doc(n: Names, routes: list[tuple[str, int, int]]) -> str:
    return (f"# {n.core}.{n.client}\n\n`{n.legacy}` sends one request: at most `{n.r}` attempts, each "
            f"bounded by `{n.t}` seconds.\nEvery package calls it; tests record the request line instead "
            f"of opening a socket.\n\n" + routed_section(n, routes, legacy=True))


def routed_section(n: Names, routes: list[tuple[str, int, int]], legacy: bool = False) -> str:
    """The docs' list of routed jobs: legacy `t=.., r=..` at first, `P(t, r)` once documented."""
    lines = "".join(f"- `{job}`: {n.t}={t}, {n.r}={r}\n" if legacy else f"- `{job}`: {n.P}({t}, {r})\n"
                    for job, t, r in routes)
    return (f"{ROUTED}\n\nScheduled jobs reach `{n.fn}` by name through `{n.core}/{n.router}.py`:\n\n{lines}")


def transport_test(n: Names) -> str:
    return (f'"""The request line the transport records (shipped; read-only). Tools outside the service\n'
            f'format lines through `_send` too."""\n\nfrom {n.core}.{n.client} import _send\n\n\n'
            f"def test_send_formats_one_request_line():\n    got = _send(\"h/x\", 7, 2)\n"
            f'    assert got == {sent(n, "h/x", 7, 2)!r}, "{n.core}/{n.client}.py: _send changed: " + repr(got)\n')


def constant_user(n: Names, host: str, const: str, r: int, call: str) -> tuple[str, str, str]:
    """(import line, function, its name) for a module that reads `const` from `host` and passes it
    to `call` (the API as that module spells it)."""
    res = const.split("_", 1)[0].lower()
    mod = host.removesuffix(".py").replace("/", ".")
    t = f"window_{res}"
    func = (f'def {t}(host):\n    """The {res} window, on the same {n.t} as {mod}."""\n'
            f'    return {call}(host + "/{res}/window", {const}, {r})\n')
    return f"from {mod} import {const}", func, t


def policy_module(n: Names) -> str:
    return (f'"""How a call may behave: how long each attempt may take and how many to make."""\n\n'
            f"from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass {n.P}:\n"
            f'    """Replaces the positional ({n.t}, {n.r}) pair of `{n.fn}`."""\n\n'
            f"    {n.t}: int\n    {n.r}: int\n")


def compat_function(n: Names) -> str:
    return (f"def {n.fn}(url, policy=None, *legacy):\n"
            f'    """{n.fn.capitalize()} `url` under `policy`, a {n.core}.{n.pmod}.{n.P}."""\n'
            f"    if not isinstance(policy, {n.P}):  # legacy form {n.legacy}\n"
            f"        policy = {n.P}(policy, *legacy)\n"
            f"    return _send(url, policy.{n.t}, policy.{n.r})\n")


def all_function(n: Names) -> str:
    return (f"def {n.fn}_all(urls, policy):\n"
            f'    """{n.fn.capitalize()} every URL in `urls` under one `policy`, in order."""\n'
            f"    return [{n.fn}(url, policy) for url in urls]\n")


def new_caller(n: Names, pkg: str, mod: str, t: int, r: int) -> tuple[str, str]:
    """A colleague's new module (still on the legacy form) and its test."""
    src = (f'"""{pkg.capitalize()} {mod}: nightly health probe of the upstream service."""\n\n'
           f"from {n.core}.{n.client} import {n.fn}\n\n\n"
           f'def probe_health(host):\n    """Ping the upstream health endpoint."""\n'
           f'    return {n.fn}(host + "/health", {t}, {r})\n')
    test = (f'"""The {pkg}.{mod} health probe (added with it)."""\n\nfrom {pkg} import {mod}\n\n\n'
            f'def test_{mod}_probe_health():\n    got = {mod}.probe_health("h")\n'
            f'    assert got == {sent(n, "h/health", t, r)!r}, "{pkg}/{mod}.py: probe_health sent " + repr(got)\n')
    return src, test


def pick_packages(rng: random.Random, k: int) -> list[str]:
    return pick(rng, PACKAGES, k)

