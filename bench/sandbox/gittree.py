"""The git tree sha of a working copy, computed in this process: what `git add -A && git
write-tree` prints (WorkingCopy.tree_sha), without two git processes per certified step.

Only where the answer cannot differ from git's: the ignore rules in force must be the
harness's own (workcopy._EXCLUDES) plus `.gitignore` files that say nothing else (the task
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
from pathlib import Path

# The patterns git would apply that this module knows: everywhere (a basename), or at the root.
SIMPLE_LINES = frozenset({b"__pycache__/", b".pytest_cache/", b"*.pyc", b""})
_IGNORED_DIRS = ("__pycache__", ".pytest_cache")


def _obj(kind: bytes, data: bytes) -> bytes:
    return hashlib.sha1(kind + b" " + str(len(data)).encode() + b"\0" + data).digest()


def _simple_gitignore(path: str) -> bool:
    """Only lines that are exactly known patterns, empty, or comments (no spaces, no CR)."""
    with open(path, "rb") as f:
        return all(line in SIMPLE_LINES or line.startswith(b"#") for line in f.read().split(b"\n"))


def _tree(root: str, rel: str) -> bytes | None:
    """The tree's sha, b"" for a tree git would leave out (empty), None if git must decide."""
    entries: list[tuple[bytes, bytes, bytes]] = []  # (sort key, mode, sha)
    with os.scandir(os.path.join(root, rel) if rel else root) as it:
        for e in it:
            name = e.name
            st = e.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                if name in _IGNORED_DIRS or (not rel and name == ".ctxbench") or fnmatch.fnmatch(name, "*.pyc"):
                    continue
                sub = _tree(root, f"{rel}/{name}" if rel else name)
                if sub is None:
                    return None
                if sub:
                    entries.append((os.fsencode(name) + b"/", b"40000", sub))
                continue
            if name == ".gitattributes" or (name == ".gitignore" and not (
                    stat.S_ISREG(st.st_mode) and _simple_gitignore(e.path))):
                return None
            if fnmatch.fnmatch(name, "*.pyc"):
                continue
            if stat.S_ISLNK(st.st_mode):
                entries.append((os.fsencode(name), b"120000", _obj(b"blob", os.fsencode(os.readlink(e.path)))))
            elif stat.S_ISREG(st.st_mode):
                with open(e.path, "rb") as f:
                    blob = _obj(b"blob", f.read())
                entries.append((os.fsencode(name), b"100755" if st.st_mode & stat.S_IXUSR else b"100644", blob))
            else:  # a FIFO, socket or device: git's own business
                return None
    if not entries:
        return b""
    entries.sort(key=lambda x: x[0])
    body = b"".join(mode + b" " + key.rstrip(b"/") + b"\0" + sha for key, mode, sha in entries)
    return _obj(b"tree", body)


def tree_sha(workdir: Path) -> str | None:
    """The tree `git add -A && git write-tree` would make of `workdir`, or None (ask git)."""
    sha = _tree(str(workdir), "")
    if sha is None:
        return None
    return (sha or _obj(b"tree", b"")).hex()


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
