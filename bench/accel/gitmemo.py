"""Host git's answers that depend on commits alone, asked once per process.

Every step head reads its history (steps.read_head: `git log --oneline base..HEAD`, `git
diff --stat base`), and the sim looks at it (`git log --stat -n N`). With fixed identities,
dates and config (hostgit.py), a commit's sha names its whole history, so trials whose
histories reach the same commits ask git the same question and get the same answer: over one
seed's 16 cells, most of these had been asked before (docs/scaling.md §9). Each was
a git process.

Only exact shapes are kept (`_key`): `git log` with `--oneline`, `--stat` or `--format=%h %an:
%s`, a count, and one revision or range; `git diff --stat` between two revisions, or from one
to the working copy. A revision is HEAD (the sha WorkingCopy remembers: HEAD moves only by
its commit) or a full sha. Anything else (a pathspec, a ref, an abbreviated sha, a date, any
other option) goes to git every time. The working copy is named by one of:
* `clean`: the harness's last commit staged it whole and nothing ran since, so git's answer
  is the same as to that commit;
* its tree sha (`worktree`, WorkingCopy.tree_sha at this very state) and HEAD: the index is
  HEAD's tree (only the harness's commits write it), and git reads for its content any file
  whose stat differs from the index's, ctime included, which no process can set back; so the
  answer is a function of the two trees (a file the index does not hold is not shown).

What else an answer could depend on, and how that is held:
* a named object must be in this repository, or git fails: a kept answer is used only then;
* an abbreviated sha (`--oneline`, `%h`) is git's shortest unique prefix, 7 at least (no packs
  here, so git's object estimate is 0: hostgit.CONFIG turns gc off): an answer is kept only
  if each is 7, and used only if each is still unique among this repository's objects;
* width, colour, decorations, dates and encoding are fixed by hostgit.run's environment.
Errors are never kept.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

MAX_KEPT_BYTES = 16 << 20  # all answers a process keeps; the least recently used go first
MAX_ANSWER_BYTES = 64 << 10  # a longer answer is not kept
_SHA = re.compile(r"[0-9a-f]{40}")
_COUNT = re.compile(r"-n[0-9]{1,6}")
_ABBREVIATING = ("--oneline", "--format=%h %an: %s")  # each line of the answer starts with a commit's prefix
_LOG_FLAGS = frozenset({"--stat", *_ABBREVIATING})
_PREFIXED_LINE = re.compile(r"[0-9a-f]{7} ")

_kept: OrderedDict[tuple[str, ...], str] = OrderedDict()
_kept_bytes = 0
_lock = threading.Lock()


def _revision(arg: str, head: str) -> tuple[str, ...] | None:
    """The full shas `arg` names (HEAD as `head`), or None unless it is one revision or `A..B`."""
    parts = arg.split("..")
    if len(parts) > 2:
        return None
    shas = tuple(head if p == "HEAD" else p for p in parts)
    return shas if all(_SHA.fullmatch(s) for s in shas) else None


def _key(
    args: tuple[str, ...], head: str, worktree: str, clean: bool
) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(the question, the objects it names) for a shape whose answer depends on commits alone."""
    if not args or not head:
        return None
    sub, rest = args[0], list(args[1:])
    if sub == "log":
        if "-n" in rest[:-1] and rest[rest.index("-n") + 1].isdigit():  # git reads `-n 3` as `-n3`
            i = rest.index("-n")
            rest[i : i + 2] = [f"-n{rest[i + 1]}"]
        flags = [a for a in rest if a.startswith("-")]
        operands = [a for a in rest if not a.startswith("-")]
        shapes = [a for a in flags if a in _LOG_FLAGS]
        counts = [a for a in flags if _COUNT.fullmatch(a)]
        if (
            len(shapes) != 1
            or len(counts) > 1
            or len(flags) != len(shapes) + len(counts)
            or len(operands) > 1
        ):
            return None
        named = _revision(operands[0], head) if operands else (head,)
        if named is None:
            return None
        return ("log", *shapes, *counts, "..".join(named)), named
    if (
        sub == "diff"
        and rest[:1] == ["--stat"]
        and len(rest) in (2, 3)
        and (len(rest) == 3 or clean or worktree)
    ):
        revisions = [_revision(a, head) for a in rest[1:]]
        if any(r is None or len(r) != 1 for r in revisions):
            return None
        named = tuple(r[0] for r in revisions if r)
        to = (
            ()
            if len(rest) == 3
            else ("clean at", head)
            if clean
            else ("working copy", worktree, "index", head)
        )
        return ("diff", "--stat", *named, *to), named
    return None


def _objects(git_dir: Path) -> Path:
    return git_dir / "objects"


def _has(git_dir: Path, sha: str) -> bool:
    return os.path.exists(_objects(git_dir) / sha[:2] / sha[2:])


def _unique_prefixes(git_dir: Path, answer: str) -> bool:
    """Whether git would print each line's 7-character prefix here too: no pack (whose objects
    would count), and no other loose object starting with it."""
    try:
        if any(name.endswith(".pack") for name in os.listdir(_objects(git_dir) / "pack")):
            return False
        for line in answer.splitlines():
            prefix = line[:7]
            if sum(name.startswith(prefix[2:]) for name in os.listdir(_objects(git_dir) / prefix[:2])) != 1:
                return False
    except OSError:
        return False
    return True


def ask(
    git_dir: Path, args: tuple[str, ...], head: str, worktree: str, clean: bool, run: Callable[[], str]
) -> str:
    """git's answer to `args` in the repository at `git_dir`, whose HEAD is `head` and working
    copy's tree `worktree` ("" if unknown): a kept one where it cannot differ, else `run()`'s
    (kept when it may be)."""
    global _kept_bytes
    key = _key(args, head, worktree, clean)
    if key is None:
        return run()
    question, named = key
    abbreviating = any(flag in question for flag in _ABBREVIATING)
    with _lock:
        answer = _kept.get(question)
        if answer is not None:
            _kept.move_to_end(question)
    if (
        answer is not None
        and all(_has(git_dir, sha) for sha in named)
        and (not abbreviating or _unique_prefixes(git_dir, answer))
    ):
        return answer
    answer = run()
    keepable = len(answer) <= MAX_ANSWER_BYTES and (
        not abbreviating
        or (
            all(_PREFIXED_LINE.match(line) for line in answer.splitlines())
            and _unique_prefixes(git_dir, answer)
        )
    )
    if keepable:
        with _lock:
            if question not in _kept:
                _kept[question] = answer
                _kept_bytes += len(answer)
            while _kept_bytes > MAX_KEPT_BYTES:
                _kept_bytes -= len(_kept.popitem(last=False)[1])
    return answer


def forget() -> None:
    """Drop every kept answer (tests)."""
    global _kept_bytes
    with _lock:
        _kept.clear()
        _kept_bytes = 0
