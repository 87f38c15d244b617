"""The host side of every sandbox: a temp working copy plus a git dir kept outside it.

Security model (the part that must hold even against hostile model-generated code):

* The task's working copy is a host temp dir; it is the ONLY host path a container sees
  (bind-mounted at /work).
* Its git dir lives outside the mount (beside it, or in memory: scratch.py; GIT_DIR/GIT_WORK_TREE): code in the
  container cannot plant hooks, config or anything else host git would execute. A `.git`
  in the working copy (`git init` in the container) is deleted before host git runs.
* Host-side file operations cannot be led out of the working copy by a path or a symlink,
  swapped in concurrently or not (workfiles.py).
* `restore` puts protected files back from the harness's own copy (restore.py).
* Git runs with a minimal fixed configuration, a timeout on every call, fixed identities
  and dates (hostgit.py: commit and tree shas are the same on every machine); the harness's
  own init and commits run in process (libgit.py) while the rules are ones libgit2 reads as git.
* Every operation on what the agent put here is bounded (content.py: iterative walks with
  depth and entry limits, capped reads, FIFOs, sockets and devices removed before git looks)
  and is the agent's failure if it still fails (`agent_content`). Backends subclass this and
  add where commands run.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from . import gitmemo, gittree, hostgit, libgit, restore, scratch
from .content import MAX_FILE_BYTES, MAX_GROWTH_BYTES, ContentError, agent_content, remove_tree, walk
from .hostgit import FIXED_DATE as FIXED_DATE
from .hostgit import GitError as GitError
from .paths import Protected
from .pristine import Tracking
from .workfiles import WorkFiles

log = logging.getLogger("bench.sandbox.base")  # its name before it left base.py: log filters keep matching

HARNESS_AUTHOR = "ctxbench <harness@ctxbench.invalid>"
_AUTHOR_RE = re.compile(r"^\s*([^<>\n]+?)\s*<([^<>\s]+)>\s*$")
HARNESS_DIR = ".ctxbench"  # made fresh by the harness for each check (certify.py); never committed


class WorkingCopy(Tracking, WorkFiles):
    """Host side of a sandbox: a temp working copy plus a git dir kept outside it; whether it
    is still pristine is pristine.Tracking, reading and writing its files workfiles.WorkFiles."""

    def __init__(self, trial_id: str, files: Mapping[str, str], track: bool = False) -> None:
        if not isinstance(trial_id, str) or not trial_id:
            raise ValueError("trial_id must be a non-empty string")
        self.trial_id, self._closed = trial_id, False
        Tracking.__init__(self, track)
        self._head = ""
        self._git_trees = False  # host git answers for the tree and commits (gittree.git_decides)
        self._clean_at = self._settled_at = -1  # `_changes` right after the last commit / when `_settle` last ran
        self._listed: tuple[int, list[str]] = (-1, [])
        # (`_changes`, the working copy's tree sha then, gittree's staging it came from if it did)
        self._tree: tuple[int, str, tuple[gittree.Staged, str] | None] = (-1, "", None)
        self._blobs: dict[str, tuple[tuple[int, ...], bytes]] = {}  # gittree._tree's: a file's stat and blob sha
        self._seen: dict[str, tuple[int, int, int, int]] = {}  # a regular file: its size, mtime, ctime, inode
        self._grown = 0  # bytes of files new or changed this trial: what its git history may have taken in
        # the tree a passing certification just ran on, and who hears of the next commit (`hold`)
        self._held: tuple[str, Callable[[str, str], None]] | None = None
        self._root = Path(tempfile.mkdtemp(prefix="ctxbench-sbx-")).resolve()
        self.workdir = self._root / "work"
        self._git_root = self._root
        try:
            self._git_root = scratch.git_root(self._root)  # in memory where there is room (scratch.py)
            self._git_dir = self._git_root / "git"
            self.workdir.mkdir()
            self._init_repo(files)
        except BaseException:
            self._remove_tree()
            raise

    def _init_repo(self, files: Mapping[str, str]) -> None:
        libgit.init(self._git_dir)
        hostgit.setup(self._git_dir)
        self._lib = libgit.Repo(self._git_dir, self.workdir)
        for path in sorted(files):
            self.write_file(path, files[path])
        self.base_commit = self.commit("initial task files", HARNESS_AUTHOR)

    def renew(self, trial_id: str, files: Mapping[str, str]) -> None:
        """Make this pristine sandbox the next trial's (pool.py): verify that no process ran and
        the state outside the working copy is the reference (`_probe`), then write the working
        copy again in the same place (the container's mount), with a new git dir. Raises if not."""
        probe = self._probe() if self.pristine else None
        if self._pristine.reference is None:  # no check ran: no code of the agent's ever did
            self._pristine.reference = probe
        if not self.pristine or probe != self._pristine.reference:
            self._pristine.taint("its state outside the working copy changed since its last check")
            raise RuntimeError(f"sandbox {self.trial_id} is not as the harness left it ({self._pristine.lost})")
        for name in os.listdir(self.workdir):
            restore.remove(self.workdir, name)
        remove_tree(str(self._git_dir))
        self.trial_id, self._git_trees, self._seen, self._grown, self._held = trial_id, False, {}, 0, None
        self._trials += 1
        self._init_repo(files)

    # -- git (always on the host, against the git dir outside the working copy) --------------
    def _git(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        return hostgit.run(self._git_dir, self.workdir, self._root, args, env)

    @agent_content
    def git(self, *args: str) -> str:
        """Host git on this trial's repository (the harness's args, or the git tool's: git_tool.py),
        or its kept answer about the same commits (gitmemo.py). HEAD moves only by `commit`."""
        if args == ("rev-parse", "HEAD") and self._head:
            return self._head + "\n"
        clean = self._changes == self._clean_at and not self._unsettled  # nothing changed since `commit` staged all
        if args == ("status", "--short") and clean:
            return ""
        self._settle()
        tree = self._tree[1] if self._tree[0] == self._changes and not self._unsettled else ""
        return gitmemo.ask(self._git_dir, args, self._head, "" if clean else tree, clean, lambda: self._git(*args))

    def hold(self, tree: str, committed: Callable[[str, str], None]) -> None:
        """The next commit must be `tree`, the tree a certification just passed on
        (bench/trial/certified_tree.py): `commit` calls `committed(tree it would commit, "")`
        first, which raises on a difference, then `committed(tree, commit sha)`. A later
        passing certification replaces the hold; a failing one leaves it (the step was
        certified on the held tree, whatever was tried after)."""
        self._held = (tree, committed)

    @agent_content
    def commit(self, message: str, author: str) -> str:
        m = _AUTHOR_RE.match(author)
        if not m:
            raise ValueError(f"author must look like 'Name <email>', got {author!r}")
        held, self._held = self._held, None
        tree = ""
        if held is not None:  # a certified step's commit: exactly the tree the judge certified
            tree = self.tree_sha()
            held[1](tree, "")
            if tree != held[0]:  # `committed` must refuse it; a belt
                raise AssertionError("a commit of a tree other than the certified one was not refused")
        self._settle()
        name, email = m.groups()
        staged = None if self._git_trees else self._staged_now()
        self._head = "" if staged is None else self._lib.commit(message, name, email, staged) or ""
        if not self._head:  # rules or words libgit2 may read otherwise (gittree.git_decides, libgit.py)
            hostgit.commit(self._git_dir, self.workdir, self._root, message, name, email)
            self._head = gittree.head_commit(self._git_dir) or self._git("rev-parse", "HEAD").strip()
        self._clean_at = self._changes
        if held is not None:
            held[1](tree, self._head)
        return self._head

    @agent_content
    def tree_sha(self) -> str:
        """Tree of the working copy now: gittree.py's while git's cannot differ, else git's (a throwaway index)."""
        self._settle()
        if self._tree[0] != self._changes or self._unsettled:
            staged = self._staged_now()
            self._tree = (self._changes, staged[1] if staged else self._git_tree(), staged)
        return self._tree[1]

    def _staged_now(self) -> tuple[gittree.Staged, str] | None:
        """gittree's staging of the working copy as it is (kept with its tree sha), or None
        where git must decide: an ignore rule of the agent's, say, and from then on."""
        if self._tree[0] == self._changes and not self._unsettled and self._tree[2] is not None:
            return self._tree[2]
        staged = None if self._git_trees else gittree.staged(self.workdir, self._blobs)
        if staged is None:
            self._git_trees = True
        else:
            self._tree = (self._changes, staged[1], staged)
        return staged

    def _git_tree(self) -> str:
        tmp = self._git_dir / f"index.tree-{os.getpid()}-{id(self)}"
        try:
            if (self._git_dir / "index").exists():  # its stat cache spares rehashing every file
                tmp.write_bytes((self._git_dir / "index").read_bytes())
            self._git("add", "-A", env={"GIT_INDEX_FILE": str(tmp)})
            return self._git("write-tree", env={"GIT_INDEX_FILE": str(tmp)}).strip()
        finally:
            tmp.unlink(missing_ok=True)

    @agent_content
    def list_files(self) -> list[str]:
        if self._listed[0] == self._changes and not self._unsettled:  # nothing written since: the same listing
            return list(self._listed[1])
        self._settle()
        names = None if self._git_trees else gittree.listing(self.workdir, self._git_dir)  # None: ask git
        names = self._git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0") \
            if names is None else names
        files = sorted({p for p in names if p and "__pycache__" not in p.split("/")
                        and os.path.lexists(self.workdir / p)})
        self._listed = (self._changes, files)
        return list(files)

    def _settle(self) -> None:
        """Before host git or a restore looks at the working copy: walk it (content.walk: bounded,
        modes made readable), removing any `.git` (git would take it for a nested repository)
        and anything that is not a file, a directory or a link (a FIFO where git reads
        `.gitignore` would block it); a file too large for git, or files grown past what a trial's
        history may take in (scratch.py), are the agent's ContentError. Once per change of the working copy."""
        if self._settled_at == self._changes and not self._unsettled:
            return
        seen = {}
        for rel, st in walk(str(self.workdir)):
            kind = stat.S_IFMT(st.st_mode)
            self._git_trees |= gittree.rules_change(rel, st, str(self.workdir / rel))
            if kind == stat.S_IFREG and st.st_size > MAX_FILE_BYTES:
                raise ContentError(f"{rel[:200]} is larger than {MAX_FILE_BYTES} bytes: host git will not read it")
            if kind == stat.S_IFREG:
                seen[rel] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                self._grown += st.st_size if self._seen.get(rel) != seen[rel] else 0
            if os.path.basename(rel) == ".git" or kind not in (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK):
                log.warning("sandbox %s: removing %s (a .git, or not a file, directory or link)", self.trial_id, rel)
                remove_tree(str(self.workdir / rel))
                self._changes += 1
        self._seen = seen
        if self._grown > MAX_GROWTH_BYTES:
            raise ContentError(f"the working copy's files grew by more than {MAX_GROWTH_BYTES} bytes in this trial: "
                               "more than host git will keep")
        self._settled_at = self._changes

    # -- the harness's own files (call only when no sandbox process runs: after `reap`) --------
    @agent_content
    def restore(self, files: Mapping[str, str], protected: Protected) -> list[str]:
        """Make every protected path exactly `files` (the harness's own copy); returns the paths
        that differed (restore.py)."""
        self._settle()
        changed = restore.restore(self.workdir, files, protected, self.write_file)
        self._changes += bool(changed)
        return changed

    @agent_content
    def harness_dir(self) -> Path:
        """A fresh, empty `.ctxbench/` in the working copy, made by the harness: whatever the
        sandbox left under that name is removed first, so nothing in it is the agent's."""
        restore.remove(self.workdir, HARNESS_DIR)
        os.mkdir(self.workdir / HARNESS_DIR, 0o755)
        return self.workdir / HARNESS_DIR

    @agent_content
    def drop_harness_dir(self) -> None:
        restore.remove(self.workdir, HARNESS_DIR)

    def _remove_tree(self) -> None:
        """The scratch dirs go whatever the agent left in them (content.remove_tree), retried once."""
        for root in dict.fromkeys((self._git_root, self._root)):
            try:
                remove_tree(str(root))
            except OSError:
                log.warning("sandbox %s: removing %s failed; retrying", self.trial_id, root, exc_info=True)
                remove_tree(str(root))
        scratch.release(self._git_root)

    def close(self, interrupted: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        self._remove_tree()

    def __enter__(self) -> WorkingCopy:
        return self

    def __exit__(self, *exc: object) -> None:  # an exception on the way out means interrupted
        self.close(interrupted=exc[0] is not None)

