"""Reading and writing the working copy's files from the host, race-free: every path goes
through the one canonicaliser (paths.py), then is walked one component at a time with
O_NOFOLLOW relative to an open directory fd. A symlink anywhere in the path, `..` escapes,
absolute paths and `.git` are refused, and a concurrent symlink swap from inside the
container cannot redirect a host write (no check-then-open race). A mixin of
workcopy.WorkingCopy: every write counts as a change of the working copy (`_changes`,
pristine.Tracking), which its kept listings and trees are keyed by."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from .content import agent_content, read_capped
from .paths import canonical, resolve


class WorkFiles:
    workdir: Path
    _changes: int

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
                        os.lstat(name, dir_fd=fd).st_mode
                    ):
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
