"""Repository text for `config_rename`: seeded names, the config readers, the read-only
fixtures that keep the old key, docs, examples, shipped tests, the check tool and drift files.

The text is in tasks/config_rename/templates/; here every seeded value is drawn, in a
fixed order, and handed to a template.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from tasks.common import walker
from tasks.common.build import RESOURCES, count_rows
from tasks.common.render import render, snippet

FUNCTIONS, TESTS, DOCS = (
    "config_rename/functions.py.j2",
    "config_rename/tests.py.j2",
    "config_rename/docs.md.j2",
)


@dataclass(frozen=True)
class Names:
    app: str
    smod: str  # new module <app>/<smod>.py
    acc: str  # the accessor it defines
    old: str
    new: str
    default: int  # the key's default
    script: str  # ops/<script>.py, a maintenance script outside the packages

    @property
    def settings(self) -> str:
        return f"{self.app}/{self.smod}.py"


def names(rng: random.Random) -> Names:
    old, new = rng.choice(
        (
            ("max_conn", "pool_size"),
            ("timeout", "timeout_s"),
            ("retries", "max_attempts"),
            ("workers", "concurrency"),
            ("batch", "batch_size"),
            ("cache_ttl", "cache_seconds"),
            ("threads", "worker_threads"),
            ("queue_len", "queue_limit"),
        )
    )
    smod, acc = rng.choice(
        (("settings", "setting"), ("confkeys", "lookup"), ("options", "option"), ("keys", "config_value"))
    )
    return Names(
        app=rng.choice(("workerd", "syncsvc", "pipeline", "harvester", "relay", "crawler")),
        smod=smod,
        acc=acc,
        old=old,
        new=new,
        default=rng.choice((4, 8, 16, 30, 60)),
        script=rng.choice(("capacity_report", "audit_limits", "print_limits", "usage")),
    )


# Reader bodies: `{old}` is the key literal, `{d}` its default, `{m}` a per-site constant.
_FORMS = (
    'return {{"{res}": cfg.get("{old}", {d}) * {m}, "region": cfg.get("region", "eu")}}',
    'return cfg["{old}"] + {m}',
    'return max(int(cfg.get("{old}", {d})) - extra, 1)',
    'size = cfg.get("{old}", {d})\n    return ["{res}-{{}}".format(i) for i in range(min(size, {m}))]',
)


def reader_module(
    rng: random.Random,
    n: Names,
    pkg: str,
    mod: str,
    sites: int,
    sibling: tuple[str, str] | None,
    helpers: list[tuple[str, str]],
) -> tuple[str, list[str], list[tuple[str, str, str]]]:
    """A module of config readers, its tests, and its readers as (function, body, params)."""
    bodies, tests, readers = [], [], []
    for i in range(sites):
        res, form, m = rng.choice(RESOURCES), rng.randrange(4), rng.randint(2, 6)
        func = f"{rng.choice(('capacity', 'limit', 'slots', 'budget', 'plan'))}_{res}_{i}"
        body = _FORMS[form].format(old=n.old, d=n.default, m=m, res=res)
        params = "cfg, extra=0" if form == 2 else "cfg"
        readers.append((func, body, params))
        bodies.append(snippet(FUNCTIONS, "reader", func, params, res, body))
        value = rng.randint(1, 40)
        cases = [{n.old: value, "region": "us"}] + ([{}] if form != 1 else [])
        tests.append(
            snippet(TESTS, "reader_test", pkg, mod, func, [(c, run(body, params, c)) for c in cases])
        )
    bodies += [src for _, src in helpers]
    if sibling:
        bodies.append(count_rows(f"count_{mod}_rows", f"Rows kept by {sibling[0]}.{sibling[1]}.", sibling[1]))
    rng.shuffle(bodies)
    return snippet(FUNCTIONS, "reader_module", pkg, mod, sibling, bodies), tests, readers


def run(body: str, params: str, cfg: dict) -> object:
    """What a reader returns for `cfg` (tests pin behaviour)."""
    ns: dict[str, Any] = {}
    exec(f"def f({params}):\n    {body}\n", ns)
    return ns["f"](cfg)


def config_module(n: Names, queue: bool = False, default: int | None = None) -> str:
    """`default`: the template's value for the key (the d-template drift changes it)."""
    return render(
        "config_rename/config.py.j2", n=n, queue=queue, default=n.default if default is None else default
    )


def queue_test(n: Names) -> str:
    return snippet(TESTS, "queue_test", n)


def settings_module(n: Names) -> str:
    return render("config_rename/settings.py.j2", n=n)


def written(name: str, n: Names, *args: object) -> str:
    """The code a step's edit writes (the oracle's): macro `name` of functions.py.j2."""
    return snippet(FUNCTIONS, name, n, *args)


def fixtures(rng: random.Random, n: Names) -> dict[str, dict]:
    return {
        f"fixtures/{name}.json": {"name": name, n.old: rng.randint(2, 48), "region": region}
        for name, region in zip(
            rng.sample(("small", "large", "legacy", "staging", "edge"), 3), ("eu", "us", "ap"), strict=True
        )
    }


def fixtures_test(
    n: Names, fx: dict[str, dict], readers: list[tuple[str, str, str, str]], default: int | None = None
) -> str:
    """Each fixture through a few readers: (module path, function, body, params); `default` is
    the template's value for the key."""
    stored = [
        (
            path,
            path.split("/")[1].removesuffix(".json"),
            [(mod, fn, run(b, p, cfg)) for mod, fn, b, p in readers],
        )
        for path, cfg in fx.items()
    ]
    cfg = {
        "name": "x",
        n.old: n.default if default is None else default,
        "region": "eu",
    }  # config.template("x")
    template = [(mod, fn, run(b, p, cfg)) for mod, fn, b, p in readers]
    imports = [mod.replace("/", ".")[:-3] for mod in sorted({r[0] for r in readers})]
    return snippet(TESTS, "fixtures_test", n, imports, stored, template)


def docs(n: Names, pkgs: list[str]) -> dict[str, str]:
    return {
        "docs/configuration.md": snippet(DOCS, "configuration", n, pkgs),
        "docs/deploy.md": snippet(DOCS, "deploy", n),
    }


def ops_script(n: Names) -> tuple[str, str]:
    return snippet(FUNCTIONS, "ops_script", n), snippet(TESTS, "ops_test", n)


def dump(obj: dict) -> str:
    return json.dumps(obj, indent=2) + "\n"


def tool(n: Names, scan: list[str]) -> str:
    """tools/check_keys.py, the file walker stamped in at `@SOURCES@` as in every shipped tool
    (tasks/common/walker.py)."""
    return walker.shipped(render("config_rename/check_keys.py.j2", n=n, scan=scan), {})
