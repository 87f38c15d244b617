"""The host side of every sandbox: a temp working copy plus a git dir kept outside it.

Security model (the part that must hold even against hostile model-generated code):

* The task's working copy is a host temp dir; it is the ONLY host path a container sees
  (bind-mounted at /work).
* Its git dir lives outside the mount (beside it; in memory with fast_git; GIT_DIR/GIT_WORK_TREE): code in the
  container cannot plant hooks, config or anything else host git would execute. A `.git`
  in the working copy (`git init` in the container) is deleted before host git runs.
* Host-side file operations cannot be led out of the working copy by a path or a symlink,
  swapped in concurrently or not (workfiles.py).
* `restore` puts protected files back from the harness's own copy (restore.py).
* Git runs with a minimal fixed configuration, a timeout on every call, fixed identities
  and dates (hostgit.py: commit and tree shas are the same on every machine), so the annex
  that runs the harness's own init and commits in process (`sandbox.fast_git`,
  bench/accel/fastgit.py) writes the very commits host git writes.
* Every operation on what the agent put here is bounded (content.py: iterative walks with
  depth and entry limits, capped reads, FIFOs, sockets and devices removed before git looks)
  and is the agent's failure if it still fails (`agent_content`). Backends subclass this and
  add where commands run.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.core.registry import Registry

from . import hostgit, restore
from .content import MAX_FILE_BYTES, MAX_GROWTH_BYTES, ContentError, agent_content, remove_tree, walk
from .hostgit import FIXED_DATE as FIXED_DATE
from .hostgit import GitError as GitError
from .paths import Protected
from .workfiles import WorkFiles

log = logging.getLogger("bench.sandbox.base")  # its name before it left base.py: log filters keep matching

HARNESS_AUTHOR = "ctxbench <harness@ctxbench.invalid>"
_AUTHOR_RE = re.compile(r"^\s*([^<>\n]+?)\s*<([^<>\s]+)>\s*$")
HARNESS_DIR = ".ctxbench"  # made fresh by the harness for each check (certify.py); never committed

# What a working copy takes on when its switch is on (bench/accel/, docs/scaling.md): loaded by
# name, so a working copy with both off (the reference path) imports neither.
ANNEXES = Registry(
    "sandbox annex",
    {
        "fast_git": "bench.accel.fastgit:FastGit",  # sandbox.fast_git: git in process, answers kept, git dir in memory
        "tracking": "bench.accel.pristine:Tracker",  # sandbox.check_cache or sandbox.reuse: is it still pristine?
    },
)
UNTRACKED = "not tracked (neither the check cache nor reuse is on)"


class WorkingCopy(WorkFiles):
    """Host side of a sandbox: a temp working copy plus a git dir kept outside it, read and
    written through workfiles.WorkFiles. `track`: follow whether it is still pristine (the
    check cache's and reuse's question: bench/accel/pristine.py); `fast_git`: the harness's git
    in process, its answers kept, its git dir in memory (bench/accel/fastgit.py)."""

    def __init__(
        self, trial_id: str, files: Mapping[str, str], track: bool = False, fast_git: bool = False
    ) -> None:
        if not isinstance(trial_id, str) or not trial_id:
            raise ValueError("trial_id must be a non-empty string")
        self.trial_id, self._closed = trial_id, False
        self._execs = 0
        self._trials = 1  # how many trials this sandbox has served (renew: bench/accel/pool.py)
        self._changes = (
            0  # bumped by anything that may change the working copy (`_settle`, the annexes' caches)
        )
        self._unsettled = False  # a command may still be running: nothing read from the copy holds
        self._head = ""
        self._clean_at = (
            self._settled_at
        ) = -1  # `_changes` right after the last commit / when `_settle` last ran
        self._seen: dict[str, tuple[int, int, int, int]] = {}  # a regular file: its size, mtime, ctime, inode
        self._grown = 0  # bytes of files new or changed this trial: what its git history may have taken in
        # the tree a passing certification just ran on, and who hears of the next commit (`hold`)
        self._held: tuple[str, Callable[[str, str], None]] | None = None
        self._tracker: Any = ANNEXES.load("tracking")(self) if track else None
        self._fast: Any = ANNEXES.load("fast_git")(self) if fast_git else None
        self._root = Path(tempfile.mkdtemp(prefix="ctxbench-sbx-")).resolve()
        self.workdir = self._root / "work"
        self._git_root = self._root
        try:
            if self._fast is not None:
                self._git_root = self._fast.git_root(self._root)
            self._git_dir = self._git_root / "git"
            self.workdir.mkdir()
            self._init_repo(files)
        except BaseException:
            self._remove_tree()
            raise

    def _init_repo(self, files: Mapping[str, str]) -> None:
        if self._fast is not None:
            self._fast.init(self._git_dir)
        else:
            hostgit.init(self._git_dir, self.workdir, self._root)
        hostgit.setup(self._git_dir)
        for path in sorted(files):
            self.write_file(path, files[path])
        self.base_commit = self.commit("initial task files", HARNESS_AUTHOR)

    # -- pristine or not: asked only by the check cache and reuse (bench/accel/pristine.py) ---
    def _ran(self, reap: bool) -> None:
        """A command is about to run in the sandbox (a backend's `exec`): it taints it (a check
        settles it again, `after_check`) and may change the working copy, later too unless it is reaped."""
        if self._tracker is not None:
            self._tracker.taint()
        self._changes += 1
        self._unsettled = self._unsettled or not reap

    @property
    def pristine(self) -> bool:
        return self._tracker is not None and self._tracker.pristine

    @property
    def reusable(self) -> bool:
        return self._tracker is not None and self._tracker.reusable

    @property
    def not_pristine_because(self) -> str:
        return UNTRACKED if self._tracker is None else self._tracker.not_pristine_because

    @property
    def not_reusable_because(self) -> str:
        return UNTRACKED if self._tracker is None else self._tracker.not_reusable_because

    def state_sha(self) -> str:
        if self._tracker is None:
            raise RuntimeError(f"sandbox {self.trial_id}: {UNTRACKED}")
        return str(self._tracker.state_sha())

    def before_check(self) -> None:
        if self._tracker is not None:
            self._tracker.before_check()

    def after_check(self, was: bool, state: str, ended: tuple[str, ...], probe: str | None) -> bool:
        return self._tracker is not None and bool(self._tracker.after_check(was, state, ended, probe))

    def cost(self) -> dict[str, float]:
        """What the sandbox cost so far: execs, trials served and, where known, the CPU seconds
        of its processes (`cpu_s`); bench.perf reads the per-trial differences from trial_end."""
        return {"execs": self._execs, "trials": self._trials}

    def _probe(self) -> str | None:
        """The state outside the working copy, after ending any process (a backend's own)."""
        raise NotImplementedError

    def renew(self, trial_id: str, files: Mapping[str, str]) -> None:
        """Make this pristine sandbox the next trial's (bench/accel/pool.py): verify that no
        process ran and the state outside the working copy is the reference, then write the
        working copy again in the same place (the container's mount), with a new git dir. Raises if not."""
        if self._tracker is None:
            raise RuntimeError(f"sandbox {self.trial_id} cannot be reused: {UNTRACKED}")
        self._tracker.verify_reset()
        for name in os.listdir(self.workdir):
            restore.remove(self.workdir, name)
        remove_tree(str(self._git_dir))
        self.trial_id, self._seen, self._grown, self._held = trial_id, {}, 0, None
        if self._fast is not None:
            self._fast.renewed()
        self._trials += 1
        self._init_repo(files)

    # -- git (always on the host, against the git dir outside the working copy) --------------
    def _git(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        return hostgit.run(self._git_dir, self.workdir, self._root, args, env)

    @agent_content
    def git(self, *args: str) -> str:
        """Host git on this trial's repository (the harness's args, or the git tool's: git_tool.py),
        or, with fast_git, its kept answer about the same commits. HEAD moves only by `commit`."""
        if self._fast is not None:
            return str(self._fast.git(args))
        self._settle()
        return self._git(*args)

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
        self._head = self._fast.commit(message, name, email) if self._fast is not None else ""
        if (
            not self._head
        ):  # host git's `add -A && commit` (fast_git: where libgit2 may read the rules otherwise)
            hostgit.commit(self._git_dir, self.workdir, self._root, message, name, email)
            self._head = self._git("rev-parse", "HEAD").strip()
        self._clean_at = self._changes
        if held is not None:
            held[1](tree, self._head)
        return self._head

    @agent_content
    def tree_sha(self) -> str:
        """Tree of the working copy now: git's, staged in a throwaway index (fast_git: its own
        while git's cannot differ)."""
        self._settle()
        if self._fast is not None:
            return str(self._fast.tree_sha())
        return self._git_tree()

    def _git_tree(self) -> str:
        tmp = self._git_dir / f"index.tree-{os.getpid()}-{id(self)}"
        try:
            if (self._git_dir / "index").exists():  # its stat cache spares rehashing every file
                # With the index's own mtime: git trusts an entry's stat (to the second) unless
                # the file's mtime is not before the index's ("racily clean", rehashed). A copy
                # with a fresh mtime hid an edit of the same size in the second of the last
                # commit: the tree of what the files held before (issue 40, docs/scaling.md).
                shutil.copy2(self._git_dir / "index", tmp)
            self._git("add", "-A", env={"GIT_INDEX_FILE": str(tmp)})
            return self._git("write-tree", env={"GIT_INDEX_FILE": str(tmp)}).strip()
        finally:
            tmp.unlink(missing_ok=True)

    @agent_content
    def list_files(self) -> list[str]:
        if self._fast is not None:
            return list(self._fast.list_files())
        self._settle()
        return self._listing(
            self._git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
        )

    def _listing(self, names: list[str]) -> list[str]:
        return sorted(
            {
                p
                for p in names
                if p and "__pycache__" not in p.split("/") and os.path.lexists(self.workdir / p)
            }
        )

    def _settle(self) -> None:
        """Before host git or a restore looks at the working copy: walk it (content.walk: bounded,
        modes made readable), removing any `.git` (git would take it for a nested repository)
        and anything that is not a file, a directory or a link (a FIFO where git reads
        `.gitignore` would block it); a file too large for git, or files grown past what a trial's
        history may take in (content.MAX_GROWTH_BYTES), are the agent's ContentError. Once per change of the working copy."""
        if self._settled_at == self._changes and not self._unsettled:
            return
        seen = {}
        for rel, st in walk(str(self.workdir)):
            kind = stat.S_IFMT(st.st_mode)
            if self._fast is not None:
                self._fast.saw(rel, st)
            if kind == stat.S_IFREG and st.st_size > MAX_FILE_BYTES:
                raise ContentError(
                    f"{rel[:200]} is larger than {MAX_FILE_BYTES} bytes: host git will not read it"
                )
            if kind == stat.S_IFREG:
                seen[rel] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                self._grown += st.st_size if self._seen.get(rel) != seen[rel] else 0
            if os.path.basename(rel) == ".git" or kind not in (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK):
                log.warning(
                    "sandbox %s: removing %s (a .git, or not a file, directory or link)", self.trial_id, rel
                )
                remove_tree(str(self.workdir / rel))
                self._changes += 1
        self._seen = seen
        if self._grown > MAX_GROWTH_BYTES:
            raise ContentError(
                f"the working copy's files grew by more than {MAX_GROWTH_BYTES} bytes in this trial: "
                "more than host git will keep"
            )
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
        if self._fast is not None:
            self._fast.release(self._git_root)

    def close(self, interrupted: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        self._remove_tree()

    def __enter__(self) -> WorkingCopy:
        return self

    def __exit__(self, *exc: object) -> None:  # an exception on the way out means interrupted
        self.close(interrupted=exc[0] is not None)
