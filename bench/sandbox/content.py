"""The one boundary between the harness and what the agent put in its working copy
(docs/threat_model.md, guarantee 3): every host-side operation on the working copy is
bounded, and whatever still goes wrong in one is the agent's failure, by construction.

* `agent_content` wraps each such operation (the working copy's file, git and restore
  methods, the tamper scan): any exception but a policy refusal, a lost sandbox or the
  trial's own end comes out as `ContentError`. The tools turn it into a failed tool result;
  anywhere else it ends the trial with `content_error`, an agent failure (bench/core/
  outcomes.py). No list of exception types decides whose fault it is: the place does.
* `walk` is iterative (a 1,200-level tree is no recursion), bounded in depth and entries,
  and makes every directory and file it meets readable by its owner first, so a harness that
  is not root is not blinded by a mode-000 directory (the container runs as the harness's
  uid, so the harness owns everything the agent made).
* `remove_tree` removes a tree however deep or unreadable: iterative, with at most
  `_FLAT_DEPTH` directory fds open, deeper directories moved up into the top one first, so
  neither the fd table nor a path ever grows with the agent's depth.
"""

from __future__ import annotations

import functools
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from bench.core.outcomes import TrialFailed

from .paths import PathRefused

MAX_DEPTH = 256  # levels below the working copy; more is not a program, it is an attack
MAX_ENTRIES = 200_000  # entries one walk may meet
MAX_READ_BYTES = 8 << 20  # a whole-file read on the host (edit_file, a step's FILES, hashing)
MAX_FILE_BYTES = 64 << 20  # a file host git may read (a 1 TiB sparse file would take it hours)
RACY_NS = (
    50_000_000  # a file changed this recently may change again with the same times (the coarse clock's tick)
)
MAX_GROWTH_BYTES = 128 << 20  # new or changed file bytes in one trial: what its git history may take in
_FLAT_DEPTH = 16
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW

F = TypeVar("F", bound=Callable[..., Any])


class ContentError(RuntimeError):
    """What the agent put in the working copy defeated a host-side operation: the agent's
    failure (a tool error inside a tool call, else the trial's `content_error`)."""


def agent_content(fn: F) -> F:
    """The boundary: any exception of `fn` is the agent's: it comes out as a ContentError that
    is still of its own type (a caller that handles a missing file still does), the original
    chained. A policy refusal (PathRefused) and the trial's end (TrialFailed: the watchdog)
    pass unchanged. None of the wrapped operations talks to the container: no SandboxLost."""

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ContentError, PathRefused, TrialFailed):
            raise
        except Exception as exc:
            raise agents(exc) from exc

    return guarded  # type: ignore[return-value]


_MARKED: dict[type, type] = {}


def _marked(kind: type) -> type:
    if kind not in _MARKED:
        _MARKED[kind] = type(kind.__name__, (kind, ContentError), {"__module__": kind.__module__})
    return _MARKED[kind]


def agents(exc: Exception) -> ContentError:
    """`exc` as the agent's: the same type and arguments, and a ContentError."""
    args = exc.args
    if isinstance(exc, OSError) and exc.filename is not None:  # not among OSError's args
        args = (exc.errno, exc.strerror, exc.filename, None, exc.filename2)
    try:
        new = _marked(type(exc))(*args)
        if str(new) == str(exc):
            return new
    except Exception:  # a type that cannot be rebuilt from its args (or mixed in): a plain one
        pass
    return ContentError(f"{type(exc).__name__}: {exc}"[:1000])


def readable(path: str | int, st: os.stat_result, dir_fd: int | None = None) -> None:
    """Give the owner (the harness's uid) what it needs to walk and read: rwx on a directory,
    r on a file. Done root or not, so both see and hash the same tree."""
    want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o400 if stat.S_ISREG(st.st_mode) else 0
    if want and stat.S_IMODE(st.st_mode) & want != want:
        os.chmod(path, stat.S_IMODE(st.st_mode) | want, dir_fd=dir_fd)


def walk(
    root: str, skip: Callable[[str, str, os.stat_result], bool] | None = None
) -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to root, lstat) of every entry below `root`, a directory before what
    it holds, names sorted within a directory; never follows a link. `skip(rel, name, st)`
    leaves an entry out with all below it; so does removing it when it is yielded. Raises
    ContentError past MAX_DEPTH levels or MAX_ENTRIES entries."""
    readable(root, os.lstat(root))
    stack, seen = [""], 0
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as it:
                entries = []
                for e in it:  # counted as listed: a directory of millions is refused, not held
                    seen += 1
                    if seen > MAX_ENTRIES:
                        raise ContentError(f"the working copy holds more than {MAX_ENTRIES} entries")
                    entries.append(e)
        except FileNotFoundError:  # the caller removed it
            continue
        subdirs = []
        for e in sorted(entries, key=lambda e: e.name):
            path = f"{rel}/{e.name}" if rel else e.name
            st = e.stat(follow_symlinks=False)
            if skip is not None and skip(rel, e.name, st):
                continue
            if stat.S_ISDIR(st.st_mode) and path.count("/") >= MAX_DEPTH:
                raise ContentError(f"the working copy is deeper than {MAX_DEPTH} levels ({path[:80]}...)")
            readable(e.path, st)
            yield path, st
            if stat.S_ISDIR(st.st_mode):
                subdirs.append(path)
        stack.extend(reversed(subdirs))


def read_capped(fd: int, limit: int = MAX_READ_BYTES) -> bytes:
    """The whole file open at `fd`, or ContentError if it is longer than `limit` (a 1 TiB
    sparse file is refused, not read)."""
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ContentError(f"file larger than {limit} bytes: not read whole by the harness")
    return data


def remove_tree(path: str) -> None:
    """Remove `path` (a file, a link or a whole directory) whatever its depth and modes."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        _in_parent(os.unlink, path)
        return
    readable(path, st)
    top = os.open(path, _DIR)
    stack: list[tuple[int, str, list[str]]] = [(top, "", os.listdir(top))]
    try:
        while stack:
            fd, name, pending = stack[-1]
            if not pending:
                pending += os.listdir(fd)  # what was moved up into it meanwhile
                if pending:
                    continue
                stack.pop()
                os.close(fd)
                if stack:
                    os.rmdir(name, dir_fd=stack[-1][0])
                continue
            child = pending.pop()
            st = os.lstat(child, dir_fd=fd)
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(child, dir_fd=fd)
            elif len(stack) >= _FLAT_DEPTH:  # a name the agent cannot have guessed
                os.rename(child, f".ctxbench-rm-{uuid.uuid4().hex}", src_dir_fd=fd, dst_dir_fd=top)
            else:
                readable(child, st, dir_fd=fd)
                sub = os.open(child, _DIR, dir_fd=fd)
                stack.append((sub, child, os.listdir(sub)))
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    _in_parent(os.rmdir, path)


def _in_parent(remove: Callable[[str], None], path: str) -> None:
    """`remove(path)`, after making the parent writable if the agent made it read-only."""
    try:
        remove(path)
    except PermissionError:
        parent = os.path.dirname(path)
        os.chmod(parent, stat.S_IMODE(os.lstat(parent).st_mode) | 0o700)
        remove(path)
