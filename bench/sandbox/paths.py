"""One path canonicaliser, for the tool policy and for both sandboxes (docs/threat_model.md).

A path the model names goes through `canonical` before anything looks at it: repeated
slashes and `.` go, `..` is resolved lexically and may not climb out of the repository,
absolute paths, NUL bytes and `.git` are refused. The sandbox then opens that canonical path
component by component without following symlinks (workfiles.py), so the path the policy
judged is the path that is written. `resolve` follows symlinks inside the working copy, so
the policy also sees where a symlink would lead (in the path or as the target).

`Protected` matches paths against the protected globs after folding case, Unicode
compatibility forms (NFKC: full-width letters, ligatures) and invisible format characters,
so `TESTS/x.py` or `ｔｅｓｔｓ/x.py` count as attempts on `tests/**`. Such a path names another
file than the protected one, and no check reads it; folding makes the attempt visible.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import stat
import unicodedata
from collections.abc import Iterable
from pathlib import Path

MAX_LINKS = 40  # like the kernel's limit on symlinks followed in one lookup


class PathRefused(ValueError):
    """The path cannot name a file of the working copy (absolute, escaping, .git, malformed)."""


class AbsolutePath(PathRefused):
    """An absolute path: refused like any other, but a weak model's mistake (it wrote `/tmp`),
    not an attempt on the harness, so the tools count it as a tool error (issue 21)."""


@functools.lru_cache(maxsize=65536)  # every certification folds every path of the working copy
def fold(text: str) -> str:
    """The comparison key: NFKC, case-folded, without invisible format characters (U+200B...),
    backslashes read as slashes."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf").replace("\\", "/")


def canonical(path: object) -> str:
    """The repo-relative canonical form of `path`, or PathRefused saying why not."""
    if not isinstance(path, str) or not path.strip():
        raise PathRefused(f"invalid path {path!r}: a non-empty repo-relative path is expected")
    if "\0" in path:
        raise PathRefused(f"invalid path {path!r}: it contains a NUL byte")
    if path.startswith("/"):
        raise AbsolutePath(f"{path!r}: absolute paths are not allowed; use a repo-relative path")
    parts: list[str] = []
    for name in path.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if not parts:
                raise PathRefused(f"{path!r} escapes the working copy")
            parts.pop()
        else:
            parts.append(name)
    if not parts:
        raise PathRefused(f"{path!r} names the repository root, not a file")
    if any(fold(name) == ".git" for name in parts):
        raise PathRefused(f"{path!r}: .git is not accessible")
    return "/".join(parts)


def resolve(workdir: Path, path: str) -> str | None:
    """Where canonical `path` lands once symlinks inside `workdir` are followed: a canonical
    repo-relative path, or None when a link leads outside the working copy (or loops)."""
    pending = path.split("/")
    done: list[str] = []
    links = 0
    while pending:
        name = pending.pop(0)
        here = workdir.joinpath(*done, name)
        try:
            mode = os.lstat(here).st_mode
        except OSError:  # missing (or unreadable): the rest cannot be a link yet
            return "/".join([*done, name, *pending])
        if not stat.S_ISLNK(mode):
            done.append(name)
            continue
        links += 1
        target = os.readlink(here)
        if links > MAX_LINKS or target.startswith("/"):
            return None
        try:
            rebuilt = canonical("/".join([*done, target, *pending]))
        except PathRefused:
            return None
        pending, done = rebuilt.split("/"), []
    return "/".join(done)


class Protected:
    """The protected globs (fnmatch syntax; `*` crosses `/`), matched on folded paths. A glob
    `d/**` also protects the directory `d` itself."""

    def __init__(self, globs: Iterable[str]) -> None:
        self.globs = tuple(globs)
        self._folded = tuple(fold(g) for g in self.globs)

    def __call__(self, path: str) -> bool:
        key = fold(path)
        return any(fnmatch.fnmatchcase(key, g) or fnmatch.fnmatchcase(key + "/", g) for g in self._folded)

    def __bool__(self) -> bool:
        return bool(self.globs)
