"""The harness's git, fast (`sandbox.fast_git`, on in experiment=grid): what a working copy
(bench/sandbox/workcopy.py) asks git, answered with fewer git processes and the same answers.

- init and commits in process, through libgit2 (libgit.py), where gittree.py knows what
  `git add -A` stages and libgit2's tree is git's; else host git commits, as without the annex;
- the working copy's tree and listing computed here (gittree.py) while no rule of the agent's
  (an ignore file, say) could make git's differ, and kept until the working copy changes;
- host git's answers about commits alone kept per process (gitmemo.py), `git status --short`
  of a copy the last commit staged whole and `git rev-parse HEAD` answered from what is known;
- the git dir in memory where there is room (scratch.py).

Each was introduced with every record of the grid's slice unchanged (docs/scaling.md), and
`python -m bench.perf.same_records` compares the reference path with this one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.accel import gitmemo, gittree, libgit, scratch


class FastGit:
    """One working copy's fast git; `wc` is the WorkingCopy that made it."""

    def __init__(self, wc: Any) -> None:
        self.wc = wc
        self._lib: libgit.Repo | None = None
        self._git_trees = False  # host git answers for the tree and commits (gittree.git_decides)
        self._listed: tuple[int, list[str]] = (-1, [])
        # (`_changes`, the working copy's tree sha then, gittree's staging it came from if it did)
        self._tree: tuple[int, str, tuple[gittree.Staged, str] | None] = (-1, "", None)
        self._blobs: dict[
            str, tuple[tuple[int, ...], bytes]
        ] = {}  # gittree._tree's: a file's stat and blob sha

    def git_root(self, sandbox_dir: Path) -> Path:
        return scratch.git_root(sandbox_dir)  # in memory where there is room

    def release(self, git_root: Path) -> None:
        scratch.release(git_root)

    def init(self, git_dir: Path) -> None:
        libgit.init(git_dir)
        self._lib = None  # opened at the first commit, after hostgit.setup wrote the harness's config

    def renewed(self) -> None:
        self._git_trees, self._lib = False, None

    def saw(self, rel: str, st: os.stat_result) -> None:
        """An entry of the working copy as WorkingCopy settles it: may it change git's rules?"""
        self._git_trees |= gittree.rules_change(rel, st, str(self.wc.workdir / rel))

    @property
    def _current(self) -> bool:
        return self._tree[0] == self.wc._changes and not self.wc._unsettled

    def git(self, args: tuple[str, ...]) -> str:
        wc = self.wc
        if args == ("rev-parse", "HEAD") and wc._head:
            return wc._head + "\n"
        clean = wc._changes == wc._clean_at and not wc._unsettled  # nothing changed since `commit` staged all
        if args == ("status", "--short") and clean:
            return ""
        wc._settle()
        tree = self._tree[1] if self._current else ""
        run: Callable[[], str] = lambda: wc._git(*args)  # noqa: E731
        return gitmemo.ask(wc._git_dir, args, wc._head, "" if clean else tree, clean, run)

    def commit(self, message: str, name: str, email: str) -> str:
        """The new HEAD, or "" where host git must commit (the caller has settled the copy)."""
        staged = None if self._git_trees else self._staged_now()
        if staged is None:
            return ""
        if self._lib is None:
            self._lib = libgit.Repo(self.wc._git_dir, self.wc.workdir)
        return self._lib.commit(message, name, email, staged) or ""

    def tree_sha(self) -> str:
        if not self._current:
            staged = self._staged_now()
            self._tree = (self.wc._changes, staged[1] if staged else self.wc._git_tree(), staged)
        return self._tree[1]

    def _staged_now(self) -> tuple[gittree.Staged, str] | None:
        """gittree's staging of the working copy as it is (kept with its tree sha), or None
        where git must decide: an ignore rule of the agent's, say, and from then on."""
        if self._current and self._tree[2] is not None:
            return self._tree[2]
        staged = None if self._git_trees else gittree.staged(self.wc.workdir, self._blobs)
        if staged is None:
            self._git_trees = True
        else:
            self._tree = (self.wc._changes, staged[1], staged)
        return staged

    def list_files(self) -> list[str]:
        wc = self.wc
        if self._listed[0] == wc._changes and not wc._unsettled:  # nothing written since: the same listing
            return list(self._listed[1])
        wc._settle()
        names = None if self._git_trees else gittree.listing(wc.workdir, wc._git_dir)  # None: ask git
        if names is None:
            names = wc._git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
        files = wc._listing(names)
        self._listed = (wc._changes, files)
        return list(files)
