"""Putting protected files back, whatever the sandbox did to them or around them: extra files
under a protected glob (a `tests/conftest.py`, a planted `__pycache__`) removed, symlinked or
replaced directories made real again, modes reset, changed content rewritten.

The working copy calls this only when no sandbox process runs (after `reap`), so nothing
races it; the writes still go through the working copy's symlink-refusing `write_file`. The
walk and the removals are content.py's: iterative, bounded, blind to no mode.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from .content import MAX_READ_BYTES, remove_tree, walk
from .paths import Protected

FILE_MODE = 0o644


def restore(
    workdir: Path, files: Mapping[str, str], protected: Protected, write_file: Callable[[str, str], None]
) -> list[str]:
    """Make every protected path under `workdir` exactly `files`; returns the paths that differed."""
    keep_dirs = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
    changed = set()
    for rel, _ in walk(str(workdir)):  # an entry removed here is not descended into
        if protected(rel) and rel not in files and rel not in keep_dirs:
            remove(workdir, rel)
            changed.add(rel)
    for path in sorted(files):
        if _force_file(workdir, path, files[path], write_file):
            changed.add(path)
    return sorted(changed)


def remove(workdir: Path, rel: str) -> None:
    """Remove a file, a symlink or a whole directory (read-only, unreadable or deep ones too)."""
    remove_tree(str(workdir / rel))


def _force_file(workdir: Path, path: str, content: str, write_file: Callable[[str, str], None]) -> bool:
    """`content` at `path` as a plain 0644 file under real directories; True if anything differed."""
    parts = path.split("/")
    changed = False
    for i in range(1, len(parts)):
        rel = "/".join(parts[:i])
        st = _lstat(workdir / rel)
        if st is not None and not stat.S_ISDIR(st.st_mode):
            remove(workdir, rel)
            changed = True
        elif st is not None and stat.S_IMODE(st.st_mode) & 0o700 != 0o700:
            os.chmod(workdir / rel, 0o755)
    full = workdir / path
    st = _lstat(full)
    data = content.encode("utf-8")
    if (
        st is not None
        and stat.S_ISREG(st.st_mode)
        and stat.S_IMODE(st.st_mode) == FILE_MODE
        and st.st_size == len(data) <= MAX_READ_BYTES
    ):
        with contextlib.suppress(OSError), open(full, "rb") as f:  # a regular file, no link: checked above
            if f.read(len(data) + 1) == data:
                return changed
    if st is not None:
        remove(workdir, path)
    write_file(path, content)
    os.chmod(full, FILE_MODE, follow_symlinks=False)
    return True


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
