"""Repository text for `config_rename`: seeded names, the config readers, the read-only
fixtures that keep the old key, docs, examples, shipped tests, the check tool and drift files."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from tasks.common import walker
from tasks.common.build import RESOURCES


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
    old, new = rng.choice((("max_conn", "pool_size"), ("timeout", "timeout_s"), ("retries", "max_attempts"),
                           ("workers", "concurrency"), ("batch", "batch_size"), ("cache_ttl", "cache_seconds"),
                           ("threads", "worker_threads"), ("queue_len", "queue_limit")))
    smod, acc = rng.choice((("settings", "setting"), ("confkeys", "lookup"), ("options", "option"),
                            ("keys", "config_value")))
    return Names(app=rng.choice(("workerd", "syncsvc", "pipeline", "harvester", "relay", "crawler")),
                 smod=smod, acc=acc, old=old, new=new, default=rng.choice((4, 8, 16, 30, 60)),
                 script=rng.choice(("capacity_report", "audit_limits", "print_limits", "usage")))


# Reader bodies: `{old}` is the key literal, `{d}` its default, `{m}` a per-site constant.
_FORMS = ('return {{"{res}": cfg.get("{old}", {d}) * {m}, "region": cfg.get("region", "eu")}}',
          'return cfg["{old}"] + {m}',
          'return max(int(cfg.get("{old}", {d})) - extra, 1)',
          'size = cfg.get("{old}", {d})\n    return ["{res}-{{}}".format(i) for i in range(min(size, {m}))]')


def reader_module(rng: random.Random, n: Names, pkg: str, mod: str, sites: int,
                  sibling: tuple[str, str] | None, helpers: list[tuple[str, str]]
                  ) -> tuple[str, list[str], list[tuple[str, str, str]]]:
    """A module of config readers, its tests, and its readers as (function, body, params)."""
    bodies, tests, readers = [], [], []
    for i in range(sites):
        res, form, m = rng.choice(RESOURCES), rng.randrange(4), rng.randint(2, 6)
        func = f"{rng.choice(('capacity', 'limit', 'slots', 'budget', 'plan'))}_{res}_{i}"
        body = _FORMS[form].format(old=n.old, d=n.default, m=m, res=res)
        params = "cfg, extra=0" if form == 2 else "cfg"
        readers.append((func, body, params))
        bodies.append(f'def {func}({params}):\n    """{res.capitalize()} sizing for one worker, from the '
                      f'service config."""\n    {body}\n')
        value = rng.randint(1, 40)
        cases = [{n.old: value, "region": "us"}] + ([{}] if form != 1 else [])
        checks = "".join(f"    assert {mod}.{func}({c!r}) == {run(body, params, c)!r}, "
                         f'"{pkg}/{mod}.py: {func} read the config differently"\n' for c in cases)
        tests.append(f"def test_{mod}_{func}():\n{checks}")
    bodies += [src for _, src in helpers]
    if sibling:
        bodies.append(f'def count_{mod}_rows(rows):\n    """Rows kept by {sibling[0]}.{sibling[1]}."""\n'
                      f"    return len({sibling[1]}(rows))\n")
    rng.shuffle(bodies)
    head = f'"""{pkg.capitalize()} {mod}: worker sizing for the {mod} job."""\n'
    if sibling:
        head += f"\nfrom {pkg}.{sibling[0]} import {sibling[1]}\n"
    return head + "\n\n" + "\n\n".join(bodies), tests, readers


def run(body: str, params: str, cfg: dict) -> object:
    """What a reader returns for `cfg` (tests pin behaviour)."""
    ns: dict[str, Any] = {}
    exec(f"def f({params}):\n    {body}\n", ns)
    return ns["f"](cfg)


def config_module(n: Names, queue: bool = False, default: int | None = None) -> str:
    """`default`: the template's value for the key (the d-template drift changes it)."""
    extra = ', "queue": {"size": 3}' if queue else ""
    default = n.default if default is None else default
    return (f'"""Loading and writing {n.app} configurations (JSON)."""\n\nimport json\n\n\n'
            'def load(path):\n    """The configuration stored at `path`."""\n    with open(path) as fh:\n'
            "        return json.load(fh)\n\n\n"
            'def template(name):\n    """A fresh configuration for a new deployment."""\n'
            f'    return {{"name": name, "{n.old}": {default}, "region": "eu"{extra}}}\n')


def queue_test(n: Names) -> str:
    return (f'"""The work queue of new deployments (added with it)."""\n\nfrom {n.app} import config\n\n\n'
            'def test_template_queue():\n    got = config.template("x").get("queue")\n'
            f'    assert got == {{"size": 3}}, "{n.app}/config.py: template() lost the queue: " + repr(got)\n')


def settings_module(n: Names) -> str:
    return (f'"""Reading configuration values by key.\n\nKeys get renamed, but stored configurations '
            "(and the read-only fixtures under\nfixtures/) keep their old names: "
            f'`{n.acc}` falls back to them.\n"""\n\n'
            f'ALIASES = {{"{n.new}": ("{n.old}",)}}  # key -> older names still found in stored configs\n\n\n'
            f"def {n.acc}(cfg, key, default=None):\n"
            '    """`cfg[key]`, else the value under an older name of `key`, else `default`."""\n'
            "    if key in cfg:\n        return cfg[key]\n    for old in ALIASES.get(key, ()):\n"
            "        if old in cfg:\n            return cfg[old]\n    return default\n")


def int_function(n: Names) -> str:
    return (f"def {n.acc}_int(cfg, key, default=0):\n"
            f'    """`{n.acc}` as an int (stored configurations may hold numbers as strings)."""\n'
            f"    return int({n.acc}(cfg, key, default))\n")


def fixtures(rng: random.Random, n: Names) -> dict[str, dict]:
    return {f"fixtures/{name}.json": {"name": name, n.old: rng.randint(2, 48), "region": region}
            for name, region in zip(rng.sample(("small", "large", "legacy", "staging", "edge"), 3),
                                    ("eu", "us", "ap"), strict=True)}


def fixtures_test(n: Names, fx: dict[str, dict], readers: list[tuple[str, str, str, str]],
                  default: int | None = None) -> str:
    """Each fixture through a few readers: (module path, function, body, params); `default` is
    the template's value for the key."""
    body = ""
    for path, cfg in fx.items():
        stem = path.split("/")[1].removesuffix(".json")
        checks = "".join(f"    assert {mod.replace('/', '.')[:-3]}.{fn}(cfg) == {run(b, p, cfg)!r}, "
                         f'"{path} through {mod}: {fn} misread it"\n' for mod, fn, b, p in readers)
        body += f'\n\ndef test_fixture_{stem}():\n    cfg = config.load("{path}")\n{checks}'
    cfg = {"name": "x", n.old: n.default if default is None else default, "region": "eu"}  # config.template("x")
    checks = "".join(f"    assert {mod.replace('/', '.')[:-3]}.{fn}(cfg) == {run(b, p, cfg)!r}, "
                     f'"{n.app}/config.py template through {mod}: {fn} misread it"\n' for mod, fn, b, p in readers)
    body += f'\n\ndef test_template():\n    cfg = config.template("x")\n{checks}'
    imports = "".join(f"import {mod.replace('/', '.')[:-3]}\n" for mod in sorted({r[0] for r in readers}))
    return (f'"""The shipped fixtures (fixtures/*.json, read-only) still use the key {n.old!r}."""\n\n'
            f"{imports}from {n.app} import config\n{body}")


def docs(n: Names, pkgs: list[str]) -> dict[str, str]:
    return {"docs/configuration.md": (
        f"# Configuration\n\n{n.app} reads one JSON object per deployment (see `{n.app}/config.py`).\n\n"
        f"| key | meaning | default |\n|---|---|---|\n| `name` | deployment name | - |\n"
        f"| `{n.old}` | per-worker capacity used by {', '.join(pkgs)} | {n.default} |\n"
        f"| `region` | where the workers run | eu |\n\nSet `{n.old}` lower on small machines.\n"),
        "docs/deploy.md": (f"# Deploying\n\nCopy `examples/deploy.json`, set `name`, and size the workers with "
                           f"`{n.old}`.\nThe value is read once per job start.\n")}


def ops_script(n: Names) -> tuple[str, str]:
    src = (f'"""Maintenance: print the capacity of a stored configuration (run by hand)."""\n\n\n'
           f'def report(cfg):\n    """One line for the on-call log."""\n'
           f'    return "capacity: {{}}".format(cfg.get("{n.old}", {n.default}))\n')
    test = (f'"""ops/{n.script}.py (shipped; read-only)."""\n\nfrom ops import {n.script}\n\n\n'
            f"def test_{n.script}():\n    assert {n.script}.report({{'{n.old}': 5}}) == 'capacity: 5', "
            f'"ops/{n.script}.py: report misread the config"\n')
    return src, test


def dump(obj: dict) -> str:
    return json.dumps(obj, indent=2) + "\n"


_TOOL = '''"""Checks for renaming the config key @OLD@ to @NEW@ (shipped with the task; read-only).

    python3 -B tools/check_keys.py settings | fallback | direct | int | migrated PATH... |
                                   docs PATH... | final

Each problem prints as `path:line: reason`; the exit code is 1 if there is any.
"""

import ast
import importlib
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OLD, NEW, ACC, SETTINGS = "@OLD@", "@NEW@", "@ACC@", "@APP@/@SMOD@.py"
SCAN = @SCAN@  # what `final` covers
SKIP = {"tests", "tools", "fixtures"}


@SOURCES@


def old_key(paths):
    out = []
    for path in sources(paths, (".py", ".md", ".json")):
        rel, text = path.relative_to(ROOT).as_posix(), path.read_text()
        if rel == SETTINGS:
            continue
        if rel.endswith(".py"):
            lines = sorted({n.lineno for n in ast.walk(ast.parse(text, rel))
                            if isinstance(n, ast.Constant) and n.value == OLD})
        else:
            lines = [i for i, line in enumerate(text.splitlines(), 1) if re.search(rf"\\b{OLD}\\b", line)]
        out += [f"{rel}:{i}: old key {OLD!r}; use {NEW!r}, read through {ACC}()" for i in lines]
    return out + direct(paths)


def direct(paths=None):
    """Reads of the new key that bypass the accessor (and so miss the old name in fixtures)."""
    out = []
    for path in sources(paths or SCAN, (".py", ".md", ".json")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.endswith(".py") or rel == SETTINGS:
            continue
        for n in ast.walk(ast.parse(path.read_text(), rel)):
            sub = isinstance(n, ast.Subscript) and getattr(n.slice, "value", None) == NEW
            get = (isinstance(n, ast.Call) and getattr(n.func, "attr", None) == "get" and n.args
                   and getattr(n.args[0], "value", None) == NEW)
            if sub or get:
                out.append(f"{rel}:{n.lineno}: reads {NEW!r} directly; use {ACC}(cfg, {NEW!r}) so {OLD!r} still works")
    return out


def accessor():
    return getattr(importlib.import_module("@APP@.@SMOD@"), ACC)


def fallback():
    get = accessor()
    ok = get({OLD: 6}, NEW) == 6 and get({}, NEW, 3) == 3
    return [] if ok else [f"{SETTINGS}:1: {ACC} no longer falls back from {NEW!r} to {OLD!r}"]


def settings():
    get = accessor()
    ok = get({NEW: 5}, NEW) == 5 and get({NEW: 5, OLD: 6}, NEW) == 5
    return ([] if ok else [f"{SETTINGS}:1: {ACC}(cfg, key, default) must return cfg[key] first"]) + fallback()


def documented_default(paths):
    """The key's row in a docs table must show the default config.template() writes."""
    config = importlib.import_module("@APP@.config")
    fresh = config.template("x")
    want = str(fresh.get(NEW, fresh.get(OLD)))
    out = []
    for p in paths:
        for i, line in enumerate((ROOT / p).read_text().splitlines(), 1):
            if line.startswith((f"| `{NEW}` |", f"| `{OLD}` |")):
                cell = line.rstrip(" |").rsplit("|", 1)[-1].strip()
                if cell != want:
                    out.append(f"{p}:{i}: documents the default as {cell}; @APP@/config.py template() writes {want}")
    return out


def int_():
    get = getattr(importlib.import_module("@APP@.@SMOD@"), ACC + "_int", None)
    if get is None:
        return [f"{SETTINGS}:1: no {ACC}_int(cfg, key, default=0)"]
    ok = get({NEW: "7"}, NEW) == 7 and get({}, NEW, 3) == 3
    return [] if ok else [f"{SETTINGS}:1: {ACC}_int must return int({ACC}(cfg, key, default))"]


def main(argv):
    cmd, rest = argv[0], argv[1:]
    checks = {"settings": settings, "fallback": fallback, "direct": direct, "int": int_,
              "migrated": lambda: old_key(rest), "docs": lambda: old_key(rest) + documented_default(rest),
              "final": lambda: old_key(SCAN)}
    if cmd not in checks:
        raise SystemExit(f"unknown check {cmd!r}")
    problems = checks[cmd]()
    print("\\n".join(problems) or f"ok: {cmd}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def tool(n: Names, scan: list[str]) -> str:
    subs = {"OLD": n.old, "NEW": n.new, "ACC": n.acc, "APP": n.app, "SMOD": n.smod, "SCAN": repr(scan)}
    return walker.shipped(_TOOL, subs)
