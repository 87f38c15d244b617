"""The harness's own git writes, in this process (libgit2, through pygit2): the trial
repository's `git init` and every `git add -A && git commit`. Host git (hostgit.py) still
answers every read (status, log, diff: their output reaches the agent's context, so it stays
git's own words) and every commit where libgit2 and git could disagree (WorkingCopy decides).

Why: a commit was two git processes (`add -A`, `commit`), and with `git init` they were more
than a third of the git processes of a 6-step sim trial (docs/scaling.md §9). What is written
is the object git writes: the paths and modes `git add -A` stages, as gittree.py reads them
(libgit2's own ignore rules are never asked), its tree checked against gittree.py's before
anything is written (where they differ, host git commits), the same content (no filter
applies), the same author and committer with the fixed date, and the message as `git commit
-m` cleans a one-line one (a newline added).
tests/bench/accel/test_libgit.py compares both commit by commit.

The fixed configuration of hostgit.py holds here too: libgit2's system, global and XDG config
(and the XDG ignore file) are looked for in an empty search path, so nothing of the host's
user decides what is staged; the repository's own config is the harness's (hostgit.setup).
libgit2 runs no hooks and no filter drivers, and the caller has bounded and settled the
working copy (content.py) before any call here.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

import pygit2
from pygit2.enums import ConfigLevel

from bench.sandbox.hostgit import COMMITTER, FIXED_DATE

from . import gittree

_FIXED_TIME = int(datetime.strptime(FIXED_DATE, "%Y-%m-%dT%H:%M:%S%z").timestamp())  # offset +0000
log = logging.getLogger(__name__)

for _level in (ConfigLevel.SYSTEM, ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.PROGRAMDATA):
    pygit2.settings.search_path[_level] = ""


def init(git_dir: Path) -> None:
    """What `git init --initial-branch=main` makes that git later reads: HEAD on an unborn
    `main`, objects/ and refs/, a config saying the repository has a working tree (given to
    every later call: hostgit's GIT_WORK_TREE, `Repo`'s workdir)."""
    repo = pygit2.init_repository(str(git_dir), bare=True, initial_head="main")
    repo.config["core.bare"] = False


_CRUD = " .,:;<>\"\\'"  # what git strips from either end of an identity's name or email


def writes_as_git(message: str, name: str, email: str) -> bool:
    """Whether `Repo.commit` writes the commit `git commit -m message` would: a one-line message
    that git's whitespace cleanup keeps as it is (git adds the newline), and a name and email
    that git keeps as they are."""
    one_line = bool(message) and message == message.strip() and not any(c in message for c in "\n\r\0")
    return one_line and all(
        w and w == w.strip(_CRUD) and not any(c in w for c in "<>\n\0") for w in (name, email)
    )


class Repo:
    """The trial repository, opened once per git dir. A commit stages only the files whose
    content or mode is not what the index holds (`_held`, by gittree's blob shas) and drops
    the paths gone since the last one: `add_all` walked the whole working copy, build
    artefacts and all, and was half of a commit's time."""

    def __init__(self, git_dir: Path, workdir: Path) -> None:
        self.git_dir, self.workdir = git_dir, workdir
        self._repo = pygit2.Repository(str(git_dir))
        self._repo.workdir = str(workdir)
        self._held: gittree.Staged | None = {}  # what the index holds; None: unknown (host git wrote it)

    def commit(
        self,
        message: str,
        author_name: str,
        author_email: str,
        staged: tuple[gittree.Staged, str] | None = None,
    ) -> str | None:
        """`git add -A && git commit -q --allow-empty -m message` with the fixed identities and
        date: the new HEAD's sha, or None where host git must commit. Only where `writes_as_git`
        and gittree.py knows what git stages (`staged`: its answer for the working copy as it
        is, else asked here); libgit2 stages exactly those paths (its own ignore rules are never
        asked: a symlink named `__pycache__` matches `__pycache__/` for libgit2, not for git),
        and its tree must be gittree.py's, or nothing is written and host git commits. (Content
        cannot differ: no filter applies, hostgit.ATTRIBUTES and gittree.git_decides.)"""
        if not writes_as_git(message, author_name, author_email):
            return None
        staged = staged or gittree.staged(self.workdir)
        if staged is None:
            return None
        files, expected = staged
        index = self._repo.index
        try:
            index.read()  # host git may have written it since (a fallback commit, say)
            held = (
                self._held if self._held is not None else dict.fromkeys(_index_paths(self.git_dir / "index"))
            )
            for path in sorted(held.keys() - files.keys()):  # `add -A` also stages deletions
                index.remove(path)
            for path, entry in files.items():
                if held.get(path) != entry:
                    index.add(path)  # reads the file as the walk saw it: the caller settled the working copy
            tree = index.write_tree()
        except (pygit2.GitError, OSError, ValueError, UnicodeError) as exc:
            self._hand_over(f"libgit2 could not stage it ({type(exc).__name__}: {exc})")
            return None
        if str(tree) != expected:
            self._hand_over(f"libgit2 staged tree {tree}, git's is {expected}")
            return None
        index.write()
        self._held = dict(files)
        author = pygit2.Signature(author_name, author_email, _FIXED_TIME, 0)
        committer = pygit2.Signature(*COMMITTER, _FIXED_TIME, 0)
        parents = [] if self._repo.head_is_unborn else [self._repo.head.target]
        return str(self._repo.create_commit("HEAD", author, committer, message + "\n", tree, parents))

    def _hand_over(self, why: str) -> None:
        """Leave the index as it is on disk and forget what it held: host git commits."""
        log.info("%s: host git commits", why)
        self._repo.index.read(force=True)  # what is on disk, or an empty index where there is none yet
        self._held = None


def _index_paths(index: Path) -> list[str]:
    """The paths of the index file, as the walk names them; ValueError where they cannot be read
    back exactly (a format gittree does not read, a name that is not UTF-8)."""
    paths = gittree.index_paths(index)
    if paths is None or any("\ufffd" in p for p in paths):
        raise ValueError("the index holds entries this module does not read")
    return paths
