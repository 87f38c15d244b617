"""Repository text for `extract_module`: seeded names, the grab-bag utility module, callers,
the string-keyed plugin registry (the trap), shipped tests, the check tool and drift files."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from tasks.common.build import FIELDS, RESOURCES

# Moved group: cohesive text helpers, each built on the helper `{h}` from the helpers module.
GROUP = {
    "slugify": '"""Lower-case words joined by dashes, for URLs."""\n    return "-".join({h}(text).lower().split(" "))',
    "titlecase": '"""Every word capitalised."""\n    return " ".join(w[:1].upper() + w[1:].lower() for w in {h}(text).split(" "))',
    "initials": '"""First letter of each word, upper-cased."""\n    return "".join(w[0].upper() for w in {h}(text).split(" ") if w)',
    "snake_case": '"""Lower-case words joined by underscores."""\n    return "_".join({h}(text).lower().split(" "))',
    "word_count": '"""How many words `text` has."""\n    return len([w for w in {h}(text).split(" ") if w])',
    "shout": '"""Upper-cased, with an exclamation mark."""\n    return {h}(text).upper() + "!"',
    "reverse_words": '"""The words in reverse order."""\n    return " ".join(reversed({h}(text).split(" ")))',
    "camel_case": '"""camelCase: the first word lower-case, the others capitalised."""\n    words = {h}(text).lower().split(" ")\n    return words[0] + "".join(w.title() for w in words[1:])',
    "truncate_words": '"""At most `count` words, with an ellipsis when cut."""\n    words = {h}(text).split(" ")\n    return " ".join(words[:count]) + (" ..." if len(words) > count else "")',
    "abbreviate": '"""At most `width` characters, ending in "..." when cut."""\n    short = {h}(text)\n    return short if len(short) <= width else short[: max(width - 3, 0)] + "..."',
}
PARAMS = {"truncate_words": "text, count=3", "abbreviate": "text, width=12"}
# Functions that stay in the utility module: numeric helpers, one required argument.
STAY = {
    "parse_int": ("value, default=0", '"""`value` as an int, or `default` when it is not a number."""\n    try:\n        return int(value)\n    except (TypeError, ValueError):\n        return default'),
    "clamp": ("value, low=0, high=100", '"""`value` limited to [low, high]."""\n    return max(low, min(high, value))'),
    "percent": ("part, whole=200", '"""`part` as a percentage of `whole`, one decimal."""\n    return round(100 * part / whole, 1) if whole else 0.0'),
    "halve": ("value", '"""Half of `value`, rounded down."""\n    return value // 2'),
    "sign": ("value", '"""-1, 0 or 1."""\n    return (value > 0) - (value < 0)'),
    "cents": ("value", '"""`value` in currency units, as integer cents."""\n    return int(round(value * 100))'),
    "bucket": ("value, size=10", '"""Lower bound of the `size`-wide bucket holding `value`."""\n    return value - value % size'),
}
SAMPLES = ("  Big   blue box ", "hello  World", " the quick brown fox jumps ", "Ada  Lovelace")


@dataclass(frozen=True)
class Names:
    app: str
    util: str  # <app>/<util>.py: the grab-bag
    helpers: str  # <app>/<helpers>.py: owns the text helper
    h: str  # the helper function
    h2: str  # its name after the rename drift
    grp: str  # new package <app>/<grp>/
    gmod: str  # <app>/<grp>/<gmod>.py holds the moved functions
    plugins: str  # <app>/<plugins>.py: the string-keyed registry (the trap)
    resolve: str
    group: tuple[str, ...]  # the moved functions, in util order
    stay: tuple[str, ...]

    def path(self, mod: str) -> str:
        return f"{self.app}/{mod}.py"


def names(rng: random.Random) -> Names:
    h, h2 = rng.choice((("squash_spaces", "collapse_spaces"), ("normalize_ws", "normalize_whitespace"),
                        ("tidy_ws", "tidy_whitespace"), ("clean_spaces", "single_spaced")))
    return Names(app=rng.choice(("shopfront", "sitekit", "portal", "backoffice", "newsdesk", "storekit")),
                 util=rng.choice(("util", "utils", "common", "misc", "toolbox")),
                 helpers=rng.choice(("textops", "strtools", "spacing", "lexing")), h=h, h2=h2,
                 grp=rng.choice(("text", "textfmt", "wording", "labels", "typeset")),
                 gmod=rng.choice(("core", "transforms", "formatting", "ops")),
                 plugins=rng.choice(("plugins", "formatters", "registry")),
                 resolve=rng.choice(("formatter", "resolve", "load_formatter")),
                 group=tuple(rng.sample(sorted(GROUP), rng.randint(4, 6))),
                 stay=tuple(rng.sample(sorted(STAY), rng.randint(3, 5))))


def group_def(name: str, h: str) -> str:
    return f"def {name}({PARAMS.get(name, 'text')}):\n    {GROUP[name].format(h=h)}\n"


def stay_def(name: str) -> str:
    params, body = STAY[name]
    return f"def {name}({params}):\n    {body}\n"


def util_module(n: Names, order: list[tuple[str, str]], h: str) -> str:
    """The grab-bag, defs in `order` ("g"roup name, "s"tay name or "f"iller source); `h` names
    the helper, so the rename drift rebuilds the same file with the new name."""
    defs = [group_def(x, h) if kind == "g" else stay_def(x) if kind == "s" else x for kind, x in order]
    return (f'"""Small helpers used across {n.app}: text formatting and number handling."""\n\n'
            f"from {n.app}.{n.helpers} import {h}\n\n\n" + "\n\n".join(defs))


def helpers_module(n: Names, renamed: bool = False) -> str:
    head = f'"""Low-level text handling shared by {n.app}."""\n\n'
    reg = "# Renamed helpers (old name -> new name); tools/check_imports.py flags the old names.\n"
    if not renamed:
        return (head + reg + "RENAMED = {}\n\n\n" f"def {n.h}(text):\n"
                '    """Collapse runs of whitespace to single spaces and strip the ends."""\n'
                '    return " ".join(text.split())\n')
    return (head + reg + f'RENAMED = {{"{n.h}": "{n.h2}"}}\n\n\n' f"def {n.h2}(text):\n"
            '    """Collapse runs of whitespace to single spaces and strip the ends."""\n'
            '    return " ".join(text.split())\n\n\n'
            f'def {n.h}(text):\n    """Deprecated name of {n.h2}; kept one release for outside users."""\n'
            f"    return {n.h2}(text)\n")


@functools.lru_cache(maxsize=8)
def _namespace(h: str) -> dict[str, object]:
    ns: dict[str, object] = {h: lambda text: " ".join(text.split())}
    for g in GROUP:
        exec(group_def(g, h), ns)
    for s in STAY:
        exec(stay_def(s), ns)
    return ns


def evaluate(n: Names, expr: str, **env: object) -> object:
    """The expected value of `expr` under the real definitions (tests pin behaviour, not prose)."""
    return eval(expr, {**_namespace(n.h), **env})


_FORMS = ('return {g}(row["name"])', 'return "{{}}:{{}}".format({g}(row["name"]), {k}(row.get("{f}", 0)))',
          'return [{g}(item["title"]) for item in row["items"]]', 'return {{"{res}": {g}(row["name"]), "{f}": {k}(row.get("{f}", 0))}}')


def caller_module(rng: random.Random, n: Names, pkg: str, mod: str, sites: int,
                  sibling: tuple[str, str] | None, helpers: list[tuple[str, str]]) -> tuple[str, list[str]]:
    used_g = rng.sample(n.group, min(sites, len(n.group)))
    bodies, tests, used_k = [], [], set()
    for i, g in enumerate(used_g):
        res, f, k = rng.choice(RESOURCES), rng.choice(FIELDS), rng.choice(n.stay)
        form = _FORMS[rng.randrange(4)]
        if "{k}" in form:
            used_k.add(k)
        func = f"{rng.choice(('label', 'format', 'show', 'render', 'title'))}_{res}_{i}"
        row = {"name": rng.choice(SAMPLES), f: rng.randint(-20, 150),
               "items": [{"title": t} for t in rng.sample(SAMPLES, 2)]}
        body = form.format(g=g, k=k, f=f, res=res)
        bodies.append(f'def {func}(row):\n    """Display form of one {res} row."""\n    {body}\n')
        want = evaluate(n, body.removeprefix("return "), row=row)
        tests.append(f"def test_{mod}_{func}():\n    got = {mod}.{func}({row!r})\n"
                     f'    assert got == {want!r}, "{pkg}/{mod}.py: {func} changed: " + repr(got)\n')
    bodies += [src for _, src in helpers]
    if sibling:
        bodies.append(f'def count_{mod}_rows(rows):\n    """Rows kept by {sibling[0]}.{sibling[1]}."""\n'
                      f"    return len({sibling[1]}(rows))\n")
    rng.shuffle(bodies)
    head = f'"""{pkg.capitalize()} {mod}: display helpers for the {mod} pages."""\n\n'
    head += f"from {n.app}.{n.util} import {', '.join(sorted(set(used_g) | used_k))}\n"
    if sibling:
        head += f"from {pkg}.{sibling[0]} import {sibling[1]}\n"
    return head + "\n\n" + "\n\n".join(bodies), tests


def plugins_module(n: Names, entries: list[tuple[str, str]]) -> str:
    table = "".join(f'    "{key}": "{n.app}.{n.util}:{fn}",\n' for key, fn in entries)
    return (f'"""Formatter plugins, referenced by name from exported reports (docs/plugins.md).\n\n'
            'Entries are "module:attribute" strings resolved on first use, so importing this\n'
            f'module stays cheap and reports can name formatters that live anywhere.\n"""\n\n'
            f"import importlib\n\nFORMATTERS = {{\n{table}}}\n\n\n"
            f'def {n.resolve}(name):\n    """The callable registered under `name`."""\n'
            '    module, _, attr = FORMATTERS[name].partition(":")\n'
            "    return getattr(importlib.import_module(module), attr)\n")


def plugins_test(n: Names, entries: list[tuple[str, str]], rng: random.Random) -> str:
    body = ""
    for key, fn in entries:
        arg = rng.choice(SAMPLES) if fn in GROUP else rng.randint(1, 150)
        want = evaluate(n, f"{fn}(arg)", arg=arg)
        body += (f'\n\ndef test_plugin_{key}():\n    got = {n.resolve}("{key}")({arg!r})\n'
                 f'    assert got == {want!r}, "{n.app}/{n.plugins}.py: formatter {key} gave " + repr(got)\n')
    return (f'"""Formatters resolved by name through {n.app}/{n.plugins}.py (shipped; read-only)."""\n\n'
            f"from {n.app}.{n.plugins} import {n.resolve}\n{body}")


def util_test(n: Names) -> str:
    lines = "".join(f"    assert {s}({v!r}) == {evaluate(n, f'{s}(v)', v=v)!r}, \"{n.path(n.util)}: {s}\"\n"
                    for s in n.stay for v in (7, 130))
    return (f'"""The numeric helpers that stay in {n.app}.{n.util} (shipped; read-only)."""\n\n'
            f"from {n.app}.{n.util} import {', '.join(n.stay)}\n\n\ndef test_numeric_helpers():\n{lines}")


def new_caller(n: Names, pkg: str, mod: str, g: str) -> tuple[str, str]:
    src = (f'"""{pkg.capitalize()} {mod}: subject lines for the weekly digest mail."""\n\n'
           f"from {n.app}.{n.util} import {g}\n\n\n"
           f'def subject(row):\n    """Mail subject for one row."""\n    return "Weekly: {{}}".format({g}(row["name"]))\n')
    want = evaluate(n, f'"Weekly: {{}}".format({g}(row["name"]))', row={"name": SAMPLES[0]})
    test = (f'"""The {pkg}.{mod} digest subjects (added with it)."""\n\nfrom {pkg} import {mod}\n\n\n'
            f"def test_{mod}_subject():\n    got = {mod}.subject({{'name': {SAMPLES[0]!r}}})\n"
            f'    assert got == {want!r}, "{pkg}/{mod}.py: subject gave " + repr(got)\n')
    return src, test


def docs(n: Names, entries: list[tuple[str, str]]) -> dict[str, str]:
    listed = "".join(f"- `{key}` -> `{n.app}.{n.util}:{fn}`\n" for key, fn in entries)
    return {"docs/plugins.md": f"# Formatter plugins\n\nReports name formatters by key; `{n.app}/{n.plugins}.py` "
                               f"maps each key to a\n`module:attribute` string resolved on first use:\n\n{listed}",
            f"docs/{n.util}.md": f"# {n.app}.{n.util}\n\nText helpers: {', '.join(n.group)}.\n"
                                 f"Number helpers: {', '.join(n.stay)}.\n"}

