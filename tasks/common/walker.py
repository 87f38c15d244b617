"""The file walker every shipped check tool (`tools/check_*.py`) uses, written once.

It is stamped into each family's tool template at `@SOURCES@` when the repository is built
(`shipped`), not shipped as a module of its own: the tools put the tree's root first on
sys.path to import the code under test, so a `tools/`-side helper imported by name could be
shadowed by a file the agent writes at the root. Stamped in, it is part of the protected tool
itself. The tool defines `ROOT` (the repository) and `SKIP` (top-level directories not walked).
"""

from __future__ import annotations

from tasks.common.build import fill_template

SOURCES = '''def sources(paths, suffixes=(".py",)):
    """The files under `paths` (repo-relative) ending in `suffixes`, in sorted order; directories
    in SKIP, hidden (`.`) or private (`_`, e.g. __pycache__) are not walked."""
    for p in paths:
        full = ROOT / p
        if full.is_file():
            yield full
            continue
        for dirpath, dirnames, filenames in os.walk(full):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP and not d.startswith((".", "_")))
            yield from (Path(dirpath) / f for f in sorted(filenames) if f.endswith(suffixes))'''


def shipped(template: str, subs: dict[str, str]) -> str:
    """A shipped tool's text: the walker at `@SOURCES@`, then the family's own @NAME@ fields."""
    if "@SOURCES@" not in template:
        raise ValueError("a shipped check tool's template must hold @SOURCES@ (tasks/common/walker.py)")
    return fill_template(template.replace("@SOURCES@", SOURCES), subs)
