"""Tidy-ups that code invites, and the shared trap that makes one of them a mistake.

An oracle says which clean-ups a competent engineer would find plausible in the files it is
editing, judged only from the text it can see (`Oracle.cleanups`): code that looks dead
because nothing *visible* uses it. Whether the clean-up breaks something is decided by the
repository -- by code the engineer has not seen -- and whether the engineer does it is
decided by the simulated model from the constraints it recalls (bench/sim/action.py).

The one clean-up every family shares: a `legacy_*` helper that nothing in its module calls.
`plant_legacy` puts such a helper into one caller module and an import of it into a module
of a package migrated later, with a test: delete the helper early and the later package's
check fails. Families plant it in the base tree (a standing trap, stated by a plan-time
invariant) or through a drift commit (a `new_trap`, stated only by the commit message).
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tasks.common import build
from tasks.spec import Cleanup, Oracle

LEGACY_PREFIX = "legacy_"
DEAD_PRIVATE = "dead-private:"
_FIELDS = ("qty", "amount", "score", "weight", "price", "total")


def mentions(text: str, name: str) -> int:
    return len(re.findall(rf"(?<![\w.]){re.escape(name)}(?!\w)", text))


def code_uses(text: str, name: str) -> int:
    """References to `name` in the module's code (loads, attributes, imports), not its definition."""
    tree = build.parse(text)
    if tree is None:
        return mentions(text, name)
    return sum(
        1
        for x in ast.walk(tree)
        if (isinstance(x, ast.Name) and x.id == name and not isinstance(x.ctx, ast.Store))
        or (isinstance(x, ast.Attribute) and x.attr == name)
        or (isinstance(x, ast.alias) and (x.asname or x.name) == name)
    )


def used_elsewhere(name: str, perceived: Mapping[str, str], own: str) -> bool:
    """Does any visible file other than `own` name `name`?"""
    return any(mentions(text, name) for path, text in perceived.items() if path != own)


def top_defs(text: str) -> list[str]:
    tree = build.parse(text)
    return [d.name for d in (tree.body if tree else ()) if isinstance(d, ast.FunctionDef)]


def _unused_defs(
    perceived: Mapping[str, str], paths: tuple[str, ...], wanted: Callable[[str], bool], prefix: str, why: str
) -> list[Cleanup]:
    """Delete each top-level function named as `wanted` that neither its module nor any visible file uses."""
    out = []
    for path in paths:
        text = perceived.get(path)
        if text is None or not path.endswith(".py"):
            continue
        for name in top_defs(text):
            if not wanted(name) or code_uses(text, name) or used_elsewhere(name, perceived, path):
                continue
            ed = build.FileEditor(path, text)
            build.delete_def(ed, name)
            out.append(
                Cleanup(
                    f"{prefix}{path}:{name}", (name,), tuple(ed.edits), f"delete {name} from {path}: {why}"
                )
            )
    return out


def legacy_helpers(perceived: Mapping[str, str], paths: tuple[str, ...]) -> list[Cleanup]:
    """Delete a `legacy_*` function that neither its module nor any visible file uses."""
    return _unused_defs(
        perceived,
        paths,
        lambda name: name.startswith(LEGACY_PREFIX),
        "legacy-helper:",
        "nothing visible calls it",
    )


def dead_private(perceived: Mapping[str, str], paths: tuple[str, ...]) -> list[Cleanup]:
    """Delete a private (`_name`) function that neither its module nor any visible file uses.
    The families plant such code only where it is really dead: a harmless tidy-up, the one
    refusing costs (`TaskSpec.harmless` holds its key prefix, `DEAD_PRIVATE`)."""
    return _unused_defs(
        perceived,
        paths,
        lambda name: name.startswith("_") and not name.startswith("__"),
        DEAD_PRIVATE,
        "nothing uses it",
    )


def dead_code(perceived: Mapping[str, str], paths: tuple[str, ...]) -> list[Cleanup]:
    """The dead-code tidy-ups every family's oracle offers: `legacy_*` helpers (a trap where a
    family planted one) and private helpers (harmless where `plant_dead` planted one)."""
    return legacy_helpers(perceived, paths) + dead_private(perceived, paths)


def plant_dead(files: dict[str, str], host: str) -> str:
    """Append to `host` a private helper nothing anywhere uses (a debug dump nobody calls), so
    deleting it is right; returns its `Cleanup.key` (see `dead_private`)."""
    blob, mod = "\n".join(files.values()), host.rsplit("/", 1)[1].removesuffix(".py")
    name = next(x for i in range(99) if mentions(blob, x := f"_{mod}_as_text{i or ''}") == 0)
    files[host] = (
        files[host].rstrip("\n")
        + "\n\n\n"
        + f'def {name}(rows):\n    """{mod.capitalize()} rows as text, for the {host} debug print; '
        'nothing has called it since the logs went structured."""\n'
        '    return "\\n".join(repr(row) for row in rows)\n'
    )
    return f"{DEAD_PRIVATE}{host}:{name}"


@dataclass(frozen=True)
class Legacy:
    """A planted legacy helper: `name` defined in `host`, imported by `importer`."""

    name: str
    host: str
    importer: str
    files: dict[str, str]  # host, importer and the importer's package test, with the plant

    @property
    def key(self) -> str:
        """The `Cleanup.key` of deleting it (see `legacy_helpers`)."""
        return f"legacy-helper:{self.host}:{self.name}"

    def dotted(self, path: str) -> str:
        return path.removesuffix(".py").replace("/", ".")


def plant_legacy(
    rng: random.Random, files: Mapping[str, str], host: str, importer: str, importer_test: str
) -> Legacy:
    """A `legacy_<res>_rows` helper appended to `host`, an exporter in `importer` that calls it,
    and a test of the exporter appended to `importer_test`. Texts are built from `files`."""
    blob = "\n".join(files.values())  # a name no file uses yet, anywhere
    res = rng.choice([r for r in build.RESOURCES if f"{LEGACY_PREFIX}{r}_rows" not in blob])
    name, field = f"{LEGACY_PREFIX}{res}_rows", rng.choice(_FIELDS)
    helper = (
        f'def {name}(rows):\n    """{res.capitalize()} rows in the old export layout: id first, then '
        f'{field}."""\n    return [(row.get("id"), row.get("{field}", 0)) for row in rows]\n'
    )
    host_text = files[host].rstrip("\n") + "\n\n\n" + helper
    mod = importer.rsplit("/", 1)[1].removesuffix(".py")
    ed = build.FileEditor(importer, files[importer])
    build.add_import(ed, f"from {host.removesuffix('.py').replace('/', '.')} import {name}")
    exporter = f"export_{res}_rows"
    importer_text = (
        ed.text.rstrip("\n") + "\n\n\n" + f'def {exporter}(rows):\n    """The nightly {res} export '
        f'still uses the old layout."""\n    return {name}(rows)\n'
    )
    test = (
        files[importer_test].rstrip("\n") + "\n\n\n"
        f"def test_{mod}_{exporter}():\n    got = {mod}.{exporter}([{{'id': 3, '{field}': 7}}])\n"
        f'    assert got == [(3, 7)], "{importer}: {exporter} changed: " + repr(got)\n'
    )
    return Legacy(name, host, importer, {host: host_text, importer: importer_text, importer_test: test})


def pick_pair(
    rng: random.Random, modules: list[list[str]], avoid: set[str], first: range | None = None
) -> tuple[str, str, int] | None:
    """(host, importer, importer's package index): a module of one package and one of a later
    package, neither in `avoid`; the host's package is drawn from `first` (default: any but the
    last). None when the packages cannot provide two such modules."""
    hosts = [
        (i, m)
        for i in (first or range(len(modules) - 1))
        if i < len(modules) - 1
        for m in modules[i]
        if m not in avoid
    ]
    rng.shuffle(hosts)
    for i, host in hosts:
        later = [(j, m) for j in range(i + 1, len(modules)) for m in modules[j] if m not in avoid]
        if later:
            j, importer = rng.choice(later)
            return host, importer, j
    return None


def invited(
    oracle: Oracle, before: Mapping[str, str], after: Mapping[str, str], paths: tuple[str, ...]
) -> list[Cleanup]:
    """The tidy-ups a step's edits of `paths` invite: found in the code as the engineer met it
    (`before`, so a step never "cleans up" what it is itself writing) and still there after its
    edits (`after`, against which the cleanup's edits are computed)."""
    met = {x.key for x in oracle.cleanups(before, paths)}
    return [x for x in oracle.cleanups(after, paths) if x.key in met]
