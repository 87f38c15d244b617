"""The host side of every sandbox: a temp working copy plus a git dir kept outside it.

Security model (the part that must hold even against hostile model-generated code):

* The task's working copy is a host temp dir; it is the ONLY host path a container sees
  (bind-mounted at /work).
* Its git dir lives NEXT to it, outside the mount (GIT_DIR/GIT_WORK_TREE): code in the
  container cannot plant hooks, config or anything else host git would execute. A `.git`
  in the working copy (`git init` in the container) is deleted before host git runs.
* Every path goes through the one canonicaliser (paths.py) and host-side file operations
  then walk it one component at a time with O_NOFOLLOW relative to an open directory fd. A
  symlink anywhere in the path, `..` escapes, absolute paths and `.git` are refused, and a
  concurrent symlink swap from inside the container cannot redirect a host write (no
  check-then-open race).
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

import contextlib
import errno
import logging
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from . import gittree, hostgit, libgit, restore
from .content import MAX_FILE_BYTES, ContentError, agent_content, read_capped, remove_tree, walk
from .hostgit import FIXED_DATE as FIXED_DATE
from .hostgit import GitError as GitError
from .paths import Protected, canonical, resolve
from .pristine import Tracking

log = logging.getLogger("bench.sandbox.base")  # its name before it left base.py: log filters keep matching

HARNESS_AUTHOR = "ctxbench <harness@ctxbench.invalid>"
_AUTHOR_RE = re.compile(r"^\s*([^<>\n]+?)\s*<([^<>\s]+)>\s*$")
HARNESS_DIR = ".ctxbench"  # made fresh by the harness for each check (certify.py); never committed


class WorkingCopy(Tracking):
    """Host side of a sandbox: a temp working copy plus a git dir kept outside it; whether it
    is still pristine is pristine.Tracking."""

    def __init__(self, trial_id: str, files: Mapping[str, str], track: bool = False) -> None:
        if not isinstance(trial_id, str) or not trial_id:
            raise ValueError("trial_id must be a non-empty string")
        self.trial_id, self._closed = trial_id, False
        Tracking.__init__(self, track)
        self._head = ""
        self._git_trees = False  # host git answers for the tree and commits (gittree.git_decides)
        self._clean_at = self._settled_at = -1  # `_changes` right after the last commit / when `_settle` last ran
        self._listed: tuple[int, list[str]] = (-1, [])
        self._root = Path(tempfile.mkdtemp(prefix="ctxbench-sbx-")).resolve()
        self.workdir = self._root / "work"
        self._git_dir = self._root / "git"
        try:
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
        self.trial_id, self._git_trees = trial_id, False
        self._trials += 1
        self._init_repo(files)

    # -- git (always on the host, against the git dir outside the working copy) --------------
    def _git(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        return hostgit.run(self._git_dir, self.workdir, self._root, args, env)

    @agent_content
    def git(self, *args: str) -> str:
        """Host git on this trial's repository (the harness's args, or the git tool's allow-listed
        ones: bench/trial/git_tool.py). HEAD moves only by `commit`, which remembers it."""
        if args == ("rev-parse", "HEAD") and self._head:
            return self._head + "\n"
        if args == ("status", "--short") and self._changes == self._clean_at and not self._unsettled:
            return ""  # nothing can have changed since `commit` staged and committed everything
        self._settle()
        return self._git(*args)

    @agent_content
    def commit(self, message: str, author: str) -> str:
        m = _AUTHOR_RE.match(author)
        if not m:
            raise ValueError(f"author must look like 'Name <email>', got {author!r}")
        self._settle()
        self._head = "" if self._git_trees else self._lib.commit(message, *m.groups()) or ""
        if not self._head:  # rules or words libgit2 may read otherwise (gittree.git_decides, libgit.py)
            hostgit.commit(self._git_dir, self.workdir, self._root, message, *m.groups())
            self._head = gittree.head_commit(self._git_dir) or self._git("rev-parse", "HEAD").strip()
        self._clean_at = self._changes
        return self._head

    @agent_content
    def tree_sha(self) -> str:
        """Tree of the working copy now: gittree.py's while git's cannot differ, else git's (a throwaway index)."""
        self._settle()
        if not self._git_trees:
            sha = gittree.tree_sha(self.workdir)
            if sha is not None:
                return sha
            self._git_trees = True  # an ignore rule of the agent's, say: git decides from now on
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
        `.gitignore` would block it); a file too large for git is the agent's ContentError.
        Once per change of the working copy."""
        if self._settled_at == self._changes and not self._unsettled:
            return
        for rel, st in walk(str(self.workdir)):
            kind = stat.S_IFMT(st.st_mode)
            self._git_trees |= gittree.rules_change(rel, st, str(self.workdir / rel))
            if kind == stat.S_IFREG and st.st_size > MAX_FILE_BYTES:
                raise ContentError(f"{rel[:200]} is larger than {MAX_FILE_BYTES} bytes: host git will not read it")
            if os.path.basename(rel) == ".git" or kind not in (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK):
                log.warning("sandbox %s: removing %s (a .git, or not a file, directory or link)", self.trial_id, rel)
                remove_tree(str(self.workdir / rel))
                self._changes += 1
        self._settled_at = self._changes

    # -- files (race-free walk below the working copy) -----------------------------------------
    def _split(self, path: str) -> list[str]:
        return canonical(path).split("/")

    @agent_content
    def resolve(self, path: str) -> tuple[str, str | None]:
        """(the canonical path, where it lands after following symlinks in the working copy, or
        None when a link leads outside): what the tool policy judges. PathRefused if invalid."""
        rel = canonical(path)
        return rel, resolve(self.workdir, rel)

    def _open_parent(self, parts: list[str], create: bool) -> int:
        fd = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in parts[:-1]:
                if create:
                    with contextlib.suppress(FileExistsError):  # an existing symlink is caught below
                        os.mkdir(name, 0o755, dir_fd=fd)
                try:
                    nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as e:
                    if e.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(
                            os.lstat(name, dir_fd=fd).st_mode):
                        raise ValueError(f"{'/'.join(parts)}: {name} is a symlink") from None
                    raise
                os.close(fd)
                fd = nfd
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _open_file(self, path: str, flags: int, create_dirs: bool = False) -> int:
        parts = self._split(path)
        dfd = self._open_parent(parts, create_dirs)
        try:
            fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644, dir_fd=dfd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise ValueError(f"{path}: is a symlink") from None
            if e.errno in (errno.EISDIR, errno.ENXIO):
                raise ValueError(f"{path}: not a regular file") from None
            raise
        finally:
            os.close(dfd)
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # FIFOs, directories opened read-only
            os.close(fd)
            raise ValueError(f"{path}: not a regular file")
        return fd

    @agent_content
    def read_file(self, path: str) -> str:
        """The whole file, up to content.MAX_READ_BYTES (longer: ContentError)."""
        return read_capped(self._open_file(path, os.O_RDONLY)).decode("utf-8", errors="replace")

    @agent_content
    def read_bytes(self, path: str, limit: int) -> bytes:
        """At most `limit` + 1 bytes of the file (one more than allowed says it is longer)."""
        with os.fdopen(self._open_file(path, os.O_RDONLY), "rb") as f:
            return f.read(limit + 1)

    @agent_content
    def write_file(self, path: str, content: str) -> None:
        self._changes += 1
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        with os.fdopen(self._open_file(path, flags, create_dirs=True), "wb") as f:
            f.write(content.encode("utf-8"))

    @agent_content
    def delete_file(self, path: str) -> None:
        self._changes += 1
        parts = self._split(path)
        dfd = self._open_parent(parts, create=False)
        try:
            mode = os.lstat(parts[-1], dir_fd=dfd).st_mode
            if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
                raise ValueError(f"{path}: not a regular file")
            os.unlink(parts[-1], dir_fd=dfd)
        finally:
            os.close(dfd)

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
        """The scratch dir goes whatever the agent left in it (content.remove_tree), retried once."""
        try:
            remove_tree(str(self._root))
        except OSError:
            log.warning("sandbox %s: removing %s failed; retrying", self.trial_id, self._root, exc_info=True)
            remove_tree(str(self._root))

    def close(self, interrupted: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        self._remove_tree()

    def __enter__(self) -> WorkingCopy:
        return self

    def __exit__(self, *exc: object) -> None:  # an exception on the way out means interrupted
        self.close(interrupted=exc[0] is not None)

