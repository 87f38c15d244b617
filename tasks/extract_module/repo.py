"""Repository text for `extract_module`: seeded names, the grab-bag utility module, callers,
the string-keyed plugin registry (the trap), shipped tests, the check tool and drift files.

The text is in tasks/extract_module/templates/; here every seeded value is drawn, in a
fixed order, and handed to a template.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from tasks.common.build import FIELDS, RESOURCES, count_rows
from tasks.common.render import render, snippet

FUNCTIONS, TESTS = "extract_module/functions.py.j2", "extract_module/tests.py.j2"

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
    "parse_int": (
        "value, default=0",
        '"""`value` as an int, or `default` when it is not a number."""\n    try:\n        return int(value)\n    except (TypeError, ValueError):\n        return default',
    ),
    "clamp": (
        "value, low=0, high=100",
        '"""`value` limited to [low, high]."""\n    return max(low, min(high, value))',
    ),
    "percent": (
        "part, whole=200",
        '"""`part` as a percentage of `whole`, one decimal."""\n    return round(100 * part / whole, 1) if whole else 0.0',
    ),
    "halve": ("value", '"""Half of `value`, rounded down."""\n    return value // 2'),
    "sign": ("value", '"""-1, 0 or 1."""\n    return (value > 0) - (value < 0)'),
    "cents": (
        "value",
        '"""`value` in currency units, as integer cents."""\n    return int(round(value * 100))',
    ),
    "bucket": (
        "value, size=10",
        '"""Lower bound of the `size`-wide bucket holding `value`."""\n    return value - value % size',
    ),
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
    h, h2 = rng.choice(
        (
            ("squash_spaces", "collapse_spaces"),
            ("normalize_ws", "normalize_whitespace"),
            ("tidy_ws", "tidy_whitespace"),
            ("clean_spaces", "single_spaced"),
        )
    )
    return Names(
        app=rng.choice(("shopfront", "sitekit", "portal", "backoffice", "newsdesk", "storekit")),
        util=rng.choice(("util", "utils", "common", "misc", "toolbox")),
        helpers=rng.choice(("textops", "strtools", "spacing", "lexing")),
        h=h,
        h2=h2,
        grp=rng.choice(("text", "textfmt", "wording", "labels", "typeset")),
        gmod=rng.choice(("core", "transforms", "formatting", "ops")),
        plugins=rng.choice(("plugins", "formatters", "registry")),
        resolve=rng.choice(("formatter", "resolve", "load_formatter")),
        group=tuple(rng.sample(sorted(GROUP), rng.randint(4, 6))),
        stay=tuple(rng.sample(sorted(STAY), rng.randint(3, 5))),
    )


def group_def(name: str, h: str) -> str:
    return f"def {name}({PARAMS.get(name, 'text')}):\n    {GROUP[name].format(h=h)}\n"


def stay_def(name: str) -> str:
    params, body = STAY[name]
    return f"def {name}({params}):\n    {body}\n"


def util_module(n: Names, order: list[tuple[str, str]], h: str) -> str:
    """The grab-bag, defs in `order` ("g"roup name, "s"tay name or "f"iller source); `h` names
    the helper, so the rename drift rebuilds the same file with the new name."""
    defs = [group_def(x, h) if kind == "g" else stay_def(x) if kind == "s" else x for kind, x in order]
    return render("extract_module/util.py.j2", n=n, h=h, defs=defs)


def helpers_module(n: Names, renamed: bool = False) -> str:
    return render("extract_module/helpers.py.j2", n=n, renamed=renamed)


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


_FORMS = (
    'return {g}(row["name"])',
    'return "{{}}:{{}}".format({g}(row["name"]), {k}(row.get("{f}", 0)))',
    'return [{g}(item["title"]) for item in row["items"]]',
    'return {{"{res}": {g}(row["name"]), "{f}": {k}(row.get("{f}", 0))}}',
)


def caller_module(
    rng: random.Random,
    n: Names,
    pkg: str,
    mod: str,
    sites: int,
    sibling: tuple[str, str] | None,
    helpers: list[tuple[str, str]],
) -> tuple[str, list[str]]:
    used_g = rng.sample(n.group, min(sites, len(n.group)))
    bodies, tests, used_k = [], [], set()
    for i, g in enumerate(used_g):
        res, f, k = rng.choice(RESOURCES), rng.choice(FIELDS), rng.choice(n.stay)
        form = _FORMS[rng.randrange(4)]
        if "{k}" in form:
            used_k.add(k)
        func = f"{rng.choice(('label', 'format', 'show', 'render', 'title'))}_{res}_{i}"
        row = {
            "name": rng.choice(SAMPLES),
            f: rng.randint(-20, 150),
            "items": [{"title": t} for t in rng.sample(SAMPLES, 2)],
        }
        body = form.format(g=g, k=k, f=f, res=res)
        bodies.append(snippet(FUNCTIONS, "site", func, res, body))
        want = evaluate(n, body.removeprefix("return "), row=row)
        tests.append(snippet(TESTS, "site_test", pkg, mod, func, row, want))
    bodies += [src for _, src in helpers]
    if sibling:
        bodies.append(count_rows(f"count_{mod}_rows", f"Rows kept by {sibling[0]}.{sibling[1]}.", sibling[1]))
    rng.shuffle(bodies)
    return snippet(
        FUNCTIONS, "caller_module", n, pkg, mod, sorted(set(used_g) | used_k), sibling, bodies
    ), tests


def written(name: str, n: Names, *args: object) -> str:
    """The code a step's edit writes (the oracle's): macro `name` of functions.py.j2."""
    return snippet(FUNCTIONS, name, n, *args)


def plugins_module(n: Names, entries: list[tuple[str, str]]) -> str:
    return render("extract_module/plugins.py.j2", n=n, entries=entries)


def plugins_test(n: Names, entries: list[tuple[str, str]], rng: random.Random) -> str:
    cases = []
    for key, fn in entries:
        arg = rng.choice(SAMPLES) if fn in GROUP else rng.randint(1, 150)
        cases.append((key, arg, evaluate(n, f"{fn}(arg)", arg=arg)))
    return snippet(TESTS, "plugins_test", n, cases)


def util_test(n: Names) -> str:
    return snippet(
        TESTS, "util_test", n, [(s, v, evaluate(n, f"{s}(v)", v=v)) for s in n.stay for v in (7, 130)]
    )


def new_caller(n: Names, pkg: str, mod: str, g: str) -> tuple[str, str]:
    want = evaluate(n, f'"Weekly: {{}}".format({g}(row["name"]))', row={"name": SAMPLES[0]})
    return snippet(FUNCTIONS, "new_caller", n, pkg, mod, g), snippet(
        TESTS, "new_caller_test", pkg, mod, SAMPLES[0], want
    )


def docs(n: Names, entries: list[tuple[str, str]]) -> dict[str, str]:
    return {
        "docs/plugins.md": snippet(FUNCTIONS, "plugins_doc", n, entries),
        f"docs/{n.util}.md": snippet(FUNCTIONS, "util_doc", n),
    }
