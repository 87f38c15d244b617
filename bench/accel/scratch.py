"""Where a sandbox's host scratch lives: its dir in the temp dir (the working copy, bind-mounted
into the container, and the judge's copy), and its git dir in memory where there is room.

Each object git writes is a file created, renamed and, at the next trial, removed. On this
machine's journaled disk (ext4 with online discard) that made the harness's in-process commits
cost twice the CPU they cost on a tmpfs (docs/scaling.md §9), so the git dir goes
to /dev/shm when it is a tmpfs with MIN_FREE_BYTES free, else beside the working copy. No
container sees it either way. What the agent can make it hold is bounded: one trial's files
may grow by content.MAX_GROWTH_BYTES (checked as WorkingCopy settles), and at most
IN_MEMORY_PER_PROCESS sandboxes of a process keep theirs in memory (the rest on disk), so a
process's hostile agents hold at most 16 x 128 MiB = 2 GiB there. The git dir is named after
the sandbox's dir (`<name>-git`), so a sweep that finds a leaked sandbox dir removes its git dir
too (engine.sweep).
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

from bench.sandbox import engine

MEMORY_FS = Path(engine.MEMORY_FS)
MIN_FREE_BYTES = 4 << 30  # below this much free memory filesystem, git dirs stay on disk
IN_MEMORY_PER_PROCESS = 16  # sandboxes of one process whose git dir is in memory at once (the grid's: 1)

_in_memory: set[Path] = set()
_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _memory_fs_is_tmpfs() -> bool:
    try:
        with open("/proc/self/mounts") as f:
            return any(line.split()[1:3] == [str(MEMORY_FS), "tmpfs"] for line in f)
    except OSError:
        return False


def git_root(sandbox_dir: Path) -> Path:
    """A new dir for the git dir of the sandbox at `sandbox_dir` (only its owner may enter it):
    in memory when there is room, else `sandbox_dir` itself. `release` it when the sandbox goes."""
    if not _memory_fs_is_tmpfs():
        return sandbox_dir
    with _lock:
        if len(_in_memory) >= IN_MEMORY_PER_PROCESS:
            return sandbox_dir
        try:
            st = os.statvfs(MEMORY_FS)
            if st.f_bavail * st.f_frsize < MIN_FREE_BYTES:
                return sandbox_dir
            # its name: a sweep finds it
            path = Path(engine.leaked_git_root(str(sandbox_dir), str(MEMORY_FS)))
            os.mkdir(path, 0o700)  # not exist_ok: a name someone made first is not ours
        except OSError:
            return sandbox_dir
        _in_memory.add(path)
        return path


def release(git_root: Path) -> None:
    with _lock:
        _in_memory.discard(git_root)
