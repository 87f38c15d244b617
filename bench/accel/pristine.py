"""Is a sandbox still exactly as the harness made it, apart from its working copy? The question
both the check cache (bench/accel/checkcache.py) and sandbox reuse (pool.py) must answer
before they trust what a check did once, or hand a container to the next trial
(docs/threat_model.md, "Reused verdicts and reused sandboxes").

A check's verdict is decided by the working copy AND by whatever else its code can read: files
outside the copy (in Docker the writable places are /tmp, /dev, /dev/shm, /dev/mqueue, the
tmpfs under /sys/fs/cgroup and two masked /proc files: the root filesystem is read-only),
SysV IPC objects, processes left running, and the container's pid 1. The working copy is
hashed on the host, every entry of it (`manifest`). The rest is tracked, not hashed:

* A sandbox starts pristine. Any command the agent runs (`run`) taints it for good: what a
  shell can leave behind is not worth enumerating.
* A check runs the agent's code too. A check that runs in a pristine sandbox ends with a probe
  of the container (PROBE: every entry of every writable place, with change times, the SysV IPC
  tables, pid 1's CPU time, threads and size), taken by the judge in the check's own exec after
  its reap, when no process of the check is left to forge it, and sent on the judge's channel
  (judge.py); the sandbox stays pristine only if the probe equals the one taken before the
  first check (in an exec of its own), the check left no process and its working copy is
  unchanged. The probe had an exec of its own after each check: one exec a check fewer.
  A change time (`%C@`) cannot be set from user space, so a file written and put back, or
  removed and made again, still shows.

The working copy's hash is taken before and after every check while pristine, and most files
are the same each time, so a file's content digest is kept from one walk to the next
(`Digests`) and reused while its stat is unchanged, racy-git style: inode, size, mtime and
ctime (which user space cannot set) all equal, and its change time strictly before the walk
began (a stamp file touched first, on the same filesystem clock), so a rewrite within the same
clock tick as the read that cached it is never missed. No process of a check is left when
the hash is taken (a pristine sandbox has none), so nothing writes while it reads.

The local sandbox isolates nothing (its commands run on the host): there, pristine only means
that the agent ran no command and no check left a process. Never run a real model on it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import uuid
from pathlib import Path
from typing import Any

from bench.sandbox.content import ContentError, read_capped, readable, walk
from bench.sandbox.judge import PROBE as PROBE  # what the judge runs after a check's reap, while pristine


class Pristine:
    """The pristine flag of one sandbox and the probe it is compared with."""

    def __init__(self) -> None:
        self.ok = True
        self.reference: str | None = None  # PROBE output before the first check
        self.lost = ""  # why it is not pristine any more: the harness's log says it (pool.py)

    def taint(self, why: str = "a command of the agent's ran") -> None:
        if self.ok:
            self.lost = why
        self.ok = False

    def settle(self, was: bool, probe: str | None, ended: tuple[str, ...], tree_kept: bool) -> bool:
        """After a check: still pristine? `probe` is None where the backend has none (local)."""
        if was and not ended and tree_kept and (probe is None or probe == self.reference):
            self.ok = True
        else:
            self.ok, self.lost = (
                False,
                self.lost
                if not was
                else (
                    f"the check left processes: {', '.join(ended)[:300]}"
                    if ended
                    else "the check changed the working copy"
                    if not tree_kept
                    else f"the state outside the working copy changed: {_first_difference(self.reference, probe)}"
                ),
            )
        return self.ok


def _first_difference(before: str | None, after: str | None) -> str:
    """The first line the probes disagree on, for the log (a probe that failed is one line)."""
    a, b = (before or "").splitlines(), (after or "").splitlines()
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b) or a[i] != b[i]:
            return f"{a[i] if i < len(a) else '(none)'!r} became {b[i] if i < len(b) else '(none)'!r}"[:300]
    return "(equal)"


class Tracker:
    """One sandbox's pristine state (`sandbox.check_cache` or `sandbox.reuse`): the sandbox
    (a workcopy.WorkingCopy) asks it on every exec (`taint`) and before and after each check.
    `sb._probe()` is the backend's reading of the state outside the working copy."""

    def __init__(self, sb: Any) -> None:
        self.sb = sb
        self._pristine = Pristine()
        self._digests: Digests | None = None  # made at the first hash (the working copy exists by then)
        self._code_ran_in: int | None = None  # the trial (`sb._trials`) whose check last ran code here

    def taint(self) -> None:
        self._pristine.taint()

    @property
    def pristine(self) -> bool:
        return self._pristine.ok and not self.sb._closed and not self._touched_by_another_trial

    @property
    def _touched_by_another_trial(self) -> bool:
        return self._code_ran_in is not None and self._code_ran_in != self.sb._trials

    @property
    def reusable(self) -> bool:
        """May this sandbox go to the next trial (pool.py)? Only if pristine and no check ever ran
        code here: a check runs the agent's code, and what a process leaves in the container's
        namespaces (the pid counter, the loopback's counters, the kernel's other per-namespace
        state) no probe can reset or read whole, so it would be a message to the next trial."""
        return self.pristine and self._code_ran_in is None

    @property
    def not_pristine_because(self) -> str:
        """Why `pristine` is False ('' while it is True), for the log."""
        if self.pristine:
            return ""
        # Why it was lost comes before "closed": a sandbox that lost it is closed by then (pool.release).
        return (
            self._pristine.lost
            if not self._pristine.ok
            else "a check of an earlier trial ran its code here"
            if self._touched_by_another_trial
            else "closed"
        )

    @property
    def not_reusable_because(self) -> str:
        """Why `reusable` is False ('' while it is True), for the log."""
        if self.reusable:
            return ""
        if self._code_ran_in is not None and self._pristine.ok:  # before "closed": pool.release
            return (
                "a check ran the agent's code here: what it left in the namespaces (the pid counter, "
                "network counters) no probe puts back"
            )
        return self.not_pristine_because

    def state_sha(self) -> str:
        """Every entry of the working copy, hashed (`manifest`). A working copy past the
        walk's or the read's bounds cannot be tracked: the sandbox is tainted and the answer
        equals no other, so no verdict is stored or reused for it."""
        if self._digests is None:  # its stamp outside the working copy, in the sandbox's own scratch dir
            self._digests = Digests(self.sb.workdir.parent / "hash-stamp")
        try:
            return manifest(self.sb.workdir, self._digests)
        except ContentError:
            self._pristine.taint()
            return f"untracked {uuid.uuid4().hex}"

    def before_check(self) -> None:
        """Before a check's exec: the first time, while pristine, take the probe to compare with."""
        if self.pristine and self._pristine.reference is None:
            self._pristine.reference = self.sb._probe()

    def after_check(self, was: bool, state: str, ended: tuple[str, ...], probe: str | None) -> bool:
        """After a check's exec (`probe`: the one its judge took after the reap, None where the
        backend has none) and its harness dir are gone: pristine again only if it was, no process
        is left, the working copy is still `state` and the probe is the reference."""
        self._code_ran_in = self.sb._trials  # whatever the check did: it ran the agent's code here
        if not was:
            return False
        kept = not ended and self.state_sha() == state
        return self._pristine.settle(was, probe if kept else None, ended, kept)

    def verify_reset(self) -> None:
        """Before the sandbox goes to the next trial (pool.py): no process ran and the state
        outside the working copy is the reference (taken now if no check ran). Raises if not."""
        probe = self.sb._probe() if self.pristine else None
        if self._pristine.reference is None:  # no check ran: no code of the agent's ever did
            self._pristine.reference = probe
        if not self.pristine or probe != self._pristine.reference:
            self._pristine.taint("its state outside the working copy changed since its last check")
            raise RuntimeError(
                f"sandbox {self.sb.trial_id} is not as the harness left it ({self._pristine.lost})"
            )


class Digests:
    """The content digests of one working copy's files from its last hash, each with the stat
    it was read under; kept for a file only when its change time is strictly before the walk's
    stamp (see the module docstring)."""

    def __init__(self, stamp: Path) -> None:
        self.stamp = stamp
        self.known: dict[str, tuple[tuple[int, ...], str]] = {}
        self.reads = 0  # files read, for the tests

    def begin(self) -> int:
        """Touch the stamp (before anything is statted) and return its change time."""
        fd = os.open(self.stamp, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.utime(fd)
            return os.fstat(fd).st_ctime_ns
        finally:
            os.close(fd)

    def digest(
        self,
        path: str,
        full: str,
        st: os.stat_result,
        began: int,
        seen: dict[str, tuple[tuple[int, ...], str]],
    ) -> str:
        sig = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        known = self.known.get(path)
        if known is not None and known[0] == sig:
            digest = known[1]
        else:
            self.reads += 1
            digest = hashlib.sha256(
                read_capped(os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK))
            ).hexdigest()
        if st.st_ctime_ns < began and st.st_mtime_ns < began:  # else racy: read again next time
            seen[path] = (sig, digest)
        return digest


def manifest(workdir: Path, digests: Digests | None = None) -> str:
    """sha256 over `workdir` itself and every entry below it, never following a link: path,
    kind, mode, owner, extended attributes (ACLs among them) and content (a link: its target).
    Ignored files, build artefacts and empty directories count too: they are what the check's
    code sees, whether git tracks them or not. The root's own mode, owner and attributes count
    because a check's code can set them and a renewed sandbox keeps the directory."""
    h = hashlib.sha256()
    root = str(workdir)
    memo = digests if digests is not None else Digests(Path())  # none: every file read, none kept
    began = digests.begin() if digests is not None else 0
    seen: dict[str, tuple[tuple[int, ...], str]] = {}
    readable(root, os.lstat(root))
    st = os.stat(root, follow_symlinks=False)
    h.update(f"r {stat.S_IMODE(st.st_mode):o} {st.st_uid} {st.st_gid} {_xattrs(root)}\0".encode())
    for path, st in walk(root):  # bounded (content.py): ContentError past its limits
        full = os.path.join(root, path)
        mode = stat.S_IMODE(st.st_mode)
        meta = f"{st.st_uid} {st.st_gid} {_xattrs(full)}"
        if stat.S_ISDIR(st.st_mode):
            h.update(f"d {path}\0{mode:o} {meta}\0".encode("utf-8", "surrogateescape"))
        elif stat.S_ISLNK(st.st_mode):  # the path and the target each end in NUL: no two pairs collide
            h.update(f"l {path}\0{os.readlink(full)}\0{meta}\0".encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(st.st_mode):
            digest = memo.digest(path, full, st, began, seen)
            h.update(f"f {path}\0{mode:o} {digest} {meta}\0".encode("utf-8", "surrogateescape"))
        else:  # a FIFO, socket or device node: its kind and mode are what can matter
            h.update(
                f"o {path}\0{stat.S_IFMT(st.st_mode):o} {mode:o} {meta}\0".encode("utf-8", "surrogateescape")
            )
    if digests is not None:
        digests.known = seen  # only what is there now: a removed file's digest goes
    return h.hexdigest()


def _xattrs(path: str) -> str:
    """The entry's extended attributes, names and values (a filesystem without them: none)."""
    try:
        names = sorted(os.listxattr(path, follow_symlinks=False))
    except OSError:
        return ""
    out = []
    for n in names:
        try:
            out.append(f"{n}={os.getxattr(path, n, follow_symlinks=False).hex()}")
        except OSError as exc:  # unreadable: its name still counts
            out.append(f"{n}?{exc.errno}")
    return " ".join(out)
