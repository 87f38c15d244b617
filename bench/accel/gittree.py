"""The git tree sha of a working copy, computed in this process: what `git add -A && git
write-tree` prints (WorkingCopy.tree_sha), without two git processes per certified step.

Only where the answer cannot differ from git's: the ignore rules in force must be the
harness's own (hostgit.EXCLUDES) plus `.gitignore` files that say nothing else (the task
repositories ship `__pycache__/` and `.pytest_cache/`), with no `.gitattributes` and nothing
but files, directories and symlinks. Otherwise `tree_sha` returns None and the caller asks
git, for good (an index that once held an ignored file would keep it; tests/bench/sandbox/
test_gittree.py compares both on many trees).

Git's objects: a blob is sha1(b"blob <size>\\0" + content); a tree is sha1(b"tree <size>\\0" +
entries), each entry `<mode> <name>\\0<20-byte sha>` with mode 100644, 100755 (user execute
bit), 120000 (symlink: the target is the blob) or 40000 (a non-empty directory), sorted by
name with a directory compared as `name/`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
import struct
import time
from pathlib import Path

from bench.sandbox.content import MAX_READ_BYTES, RACY_NS, walk

# The patterns git would apply that this module knows: everywhere (a basename), or at the root.
SIMPLE_LINES = frozenset({b"__pycache__/", b".pytest_cache/", b"*.pyc", b""})
_IGNORED_DIRS = ("__pycache__", ".pytest_cache")


def _obj(kind: bytes, data: bytes) -> bytes:
    return hashlib.sha1(kind + b" " + str(len(data)).encode() + b"\0" + data).digest()


def _simple_gitignore(path: str) -> bool:
    """Only lines that are exactly known patterns, empty, or comments (no spaces, no CR)."""
    with open(path, "rb") as f:
        return all(line in SIMPLE_LINES or line.startswith(b"#") for line in f.read().split(b"\n"))


def git_decides(name: str, st: os.stat_result, full: str) -> bool:
    """Whether this entry makes the rules git applies more than the harness's own: a
    `.gitattributes`, or a `.gitignore` that says more than SIMPLE_LINES. Past one, only git
    answers for the working copy (here, and libgit.py's commits)."""
    return name == ".gitattributes" or (
        name == ".gitignore"
        and not (stat.S_ISREG(st.st_mode) and st.st_size < 65536 and _simple_gitignore(full))
    )


def rules_change(rel: str, st: os.stat_result, full: str) -> bool:
    """`git_decides` for an entry of a walk that skips nothing (WorkingCopy._settle): below a
    directory git ignores, nothing counts (pytest's `.pytest_cache/.gitignore` says `*`)."""
    parts = rel.split("/")
    below_ignored = (
        parts[0] == ".ctxbench"
        and len(parts) > 1
        or any(p in _IGNORED_DIRS or p.endswith(".pyc") for p in parts[:-1])
    )
    return not below_ignored and git_decides(parts[-1], st, full)


def _ignored(rel: str, name: str, st: os.stat_result) -> bool:
    """What git leaves out whatever the rules say: build artefacts, the harness's own dir."""
    if stat.S_ISDIR(st.st_mode):
        return name in _IGNORED_DIRS or (not rel and name == ".ctxbench") or fnmatch.fnmatch(name, "*.pyc")
    return fnmatch.fnmatch(name, "*.pyc")


def _staged(root: str) -> list[tuple[str, os.stat_result, bytes]] | None:
    """Every directory (mode b"") and every file or link `git add -A` stages below `root`, with
    the mode git gives it, walked once (content.walk, bounded, parents first); None if git must
    decide: rules past the harness's, a file too large to read here, a FIFO, socket or device."""
    out: list[tuple[str, os.stat_result, bytes]] = []
    for path, st in walk(root, skip=_ignored):
        if stat.S_ISDIR(st.st_mode):
            out.append((path, st, b""))
        elif git_decides(path.rpartition("/")[2], st, os.path.join(root, path)):
            return None
        elif stat.S_ISLNK(st.st_mode):
            out.append((path, st, b"120000"))
        elif stat.S_ISREG(st.st_mode) and st.st_size <= MAX_READ_BYTES:
            out.append((path, st, b"100755" if st.st_mode & stat.S_IXUSR else b"100644"))
        else:
            return None
    return out


Staged = dict[str, tuple[bytes, bytes]]  # path: (mode, blob sha) of what `git add -A` stages


def staged(
    workdir: Path, blobs: dict[str, tuple[tuple[int, ...], bytes]] | None = None
) -> tuple[Staged, str] | None:
    """What `git add -A` leaves in the index of `workdir` (each file's or link's mode and blob
    sha) and the tree `git write-tree` then makes, from one walk; None where git must decide.
    What libgit.py stages, and checks its tree against; `blobs`: see `_tree`."""
    found: Staged = {}
    sha = _tree(str(workdir), blobs, found)
    return None if sha is None else (found, (sha or _obj(b"tree", b"")).hex())


def _tree(
    root: str, blobs: dict[str, tuple[tuple[int, ...], bytes]] | None = None, found: Staged | None = None
) -> bytes | None:
    """The root tree's sha, b"" for an empty tree, None if git must decide. A tree's entries are
    hashed once all of its subtrees are. `blobs` (path: the file's stat and blob sha) spares
    reading a file whose inode, size, mtime and ctime are as when it was hashed: a write moves
    ctime, which no process can set. It keeps only files whose ctime is RACY_NS before the walk,
    as a write in the same clock tick would leave it as it was. `found` is given every file's
    and link's mode and blob sha."""
    began = time.time_ns() - RACY_NS
    staged = _staged(root)
    if staged is None:
        return None
    kept: dict[str, tuple[tuple[int, ...], bytes]] | None = {} if blobs is not None else None
    entries: dict[str, list[tuple[bytes, bytes, bytes]]] = {"": []}  # dir -> (sort key, mode, sha)
    for path, st, mode in staged:
        parent, _, name = path.rpartition("/")
        full = os.path.join(root, path)
        if not mode:
            entries[path] = []
        elif mode == b"120000":
            entries[parent].append((os.fsencode(name), mode, _obj(b"blob", os.fsencode(os.readlink(full)))))
            if found is not None:
                found[path] = (mode, entries[parent][-1][2])
        else:
            sig = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            known = blobs.get(path) if blobs is not None else None
            if known is not None and known[0] == sig:
                sha = known[1]
            else:
                with open(full, "rb") as f:
                    sha = _obj(b"blob", f.read(MAX_READ_BYTES + 1))
            if kept is not None and st.st_ctime_ns < began and st.st_mtime_ns < began:
                kept[path] = (sig, sha)
            entries[parent].append((os.fsencode(name), mode, sha))
            if found is not None:
                found[path] = (mode, sha)
    if blobs is not None and kept is not None:
        blobs.clear()
        blobs.update(kept)
    shas: dict[str, bytes] = {}
    for path in sorted(entries, key=lambda p: -p.count("/") - bool(p)):  # deepest first, the root last
        own = entries[path]
        if not own:
            shas[path] = b""
            continue
        own.sort(key=lambda x: x[0])
        shas[path] = _obj(
            b"tree", b"".join(mode + b" " + key.rstrip(b"/") + b"\0" + sha for key, mode, sha in own)
        )
        if path:
            parent, _, name = path.rpartition("/")
            entries[parent].append((os.fsencode(name) + b"/", b"40000", shas[path]))
    return shas[""]


def tree_sha(workdir: Path, blobs: dict[str, tuple[tuple[int, ...], bytes]] | None = None) -> str | None:
    """The tree `git add -A && git write-tree` would make of `workdir`, or None (ask git);
    `blobs`: see `_tree`."""
    found = staged(workdir, blobs)
    return None if found is None else found[1]


def listing(workdir: Path, git_dir: Path) -> list[str] | None:
    """What `git ls-files -z --cached --others --exclude-standard` prints, split and decoded as
    host git's output is (workcopy.list_files), or None where git must say: the paths of the
    index (`index_paths`) and every file or link below the working copy that the ignore rules
    leave in, under the same rules as `_tree` (the harness's, and `.gitignore` files that add
    nothing to them). Two git processes per step were spent on this listing."""
    cached = index_paths(git_dir / "index")
    if cached is None:
        return None
    names = set(cached)
    for path, st in walk(str(workdir), skip=_ignored):
        if path.rpartition("/")[2] == ".gitignore" and not (
            stat.S_ISREG(st.st_mode) and st.st_size < 65536 and _simple_gitignore(os.path.join(workdir, path))
        ):
            return None
        if not stat.S_ISDIR(st.st_mode):
            names.add(os.fsencode(path).decode("utf-8", errors="replace"))  # as git's bytes are decoded
    return sorted(names)


def index_paths(index: Path) -> list[str] | None:
    """The paths of a git index (format 2 or 3, git's default; no index yet: none), or None for
    anything else: a newer format, an entry with a merge stage or extended flags
    (skip-worktree, intent-to-add), an extension that keeps entries elsewhere (split, sparse)."""
    try:
        data = index.read_bytes()
    except FileNotFoundError:
        return []
    if len(data) < 32 or data[:4] != b"DIRC" or struct.unpack(">I", data[4:8])[0] not in (2, 3):
        return None
    (count,), pos, out = struct.unpack(">I", data[8:12]), 12, []
    try:
        for _ in range(count):
            (flags,) = struct.unpack(">H", data[pos + 60 : pos + 62])
            if flags & 0x7000:
                return None
            end = data.index(b"\0", pos + 62)
            out.append(data[pos + 62 : end].decode("utf-8", errors="replace"))
            pos += (end - pos + 8) // 8 * 8  # 62 bytes, the name, 1-8 NULs to a multiple of 8
        while pos + 8 <= len(data) - 20:
            sig, (size,) = data[pos : pos + 4], struct.unpack(">I", data[pos + 4 : pos + 8])
            if sig in (b"link", b"sdir"):
                return None
            pos += 8 + size
    except (struct.error, ValueError):
        return None
    return out


def head_commit(git_dir: Path) -> str:
    """HEAD's commit read from the git dir, with no git process: only the harness writes there,
    and with auto gc off its branch stays a loose ref. "" when it is not one (ask git then)."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="ascii").strip()
        if head.startswith("ref: refs/heads/"):
            sha = (git_dir / head[5:]).read_text(encoding="ascii").strip()
            return sha if re.fullmatch(r"[0-9a-f]{40}", sha) else ""
    except (OSError, UnicodeDecodeError):
        pass
    return ""
