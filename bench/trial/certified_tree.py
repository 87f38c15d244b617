"""What was certified is what is recorded (docs/threat_model.md, "The certified tree is the
recorded tree"; issue 42, item 2).

A check runs on the judge's copy (judge.py), built from the working copy just before it. The
code under test runs during the check as the agent's uid and can write the working copy
(`/work`) while the judge looks elsewhere: put the legacy code back, delete a module, empty the
tree. A step's commit and the final tree are read from the working copy, so without a
comparison the run would record a tree nobody certified. So:

* `tree_of` is the git tree sha of exactly what the judge's copy holds (the sha the `check`
  event records as `tree`);
* `after_check`: once the check's exec has returned (its reap ended every process of the
  agent's), the working copy's tree must be that tree;
* `hold`: after a passing check, the next commit must be that tree too (tool calls after a
  `submit_step` in the same reply run before the step's commit): WorkingCopy.commit refuses
  any other and logs what it committed as a `commit` event.

Any difference is a `policy_violation` and the agent's failure `uncertified_tree`
(bench/core/outcomes.py). Its detail says why: the paths of the working copy the judge's copy
cannot carry (a name that is not UTF-8, compiled Python an ignore rule of the agent's let in, a
file past the copy's room), when there are any (`uncarried`); else that the working copy was
changed after the judge's copy was taken.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence

from bench.core import outcomes
from bench.eventlog.writer import EventLog
from bench.sandbox.base import Sandbox
from bench.sandbox.content import ContentError
from bench.sandbox.judge import COPY_LIMIT
from ctxlog import events as ev

Entries = Mapping[str, tuple[str, bytes]]
_NAMED = 5  # uncarried paths a detail names

_MODES = {"file": b"100644", "exec": b"100755", "link": b"120000"}


def _obj(kind: bytes, data: bytes) -> bytes:
    return hashlib.sha1(kind + b" " + str(len(data)).encode() + b"\0" + data).digest()


def tree_of(entries: Mapping[str, tuple[str, bytes]]) -> str:
    """The tree `git write-tree` makes of a judge's copy's entries (judge.tree_entries: path ->
    (kind, data)); an entry below another's path is not in the copy (judge._placed), so not here."""
    placed = {
        p: e
        for p, e in entries.items()
        if not any("/".join(p.split("/")[:k]) in entries for k in range(1, p.count("/") + 1))
    }
    dirs: dict[str, list[tuple[bytes, bytes, bytes]]] = {"": []}  # dir -> (sort key, mode, sha)
    for path in placed:
        parts = path.split("/")
        for k in range(1, len(parts)):
            dirs.setdefault("/".join(parts[:k]), [])
    for path, (kind, data) in placed.items():
        parent, _, name = path.rpartition("/")
        dirs[parent].append((name.encode("utf-8", "surrogateescape"), _MODES[kind], _obj(b"blob", data)))
    for path in sorted(dirs, key=lambda p: -p.count("/") - bool(p)):  # deepest first, the root last
        own = sorted(dirs[path], key=lambda x: x[0])
        sha = _obj(b"tree", b"".join(mode + b" " + key.rstrip(b"/") + b"\0" + s for key, mode, s in own))
        if path:
            parent, _, name = path.rpartition("/")
            dirs[parent].append((name.encode("utf-8", "surrogateescape") + b"/", b"40000", sha))
        else:
            return sha.hex()
    raise AssertionError("unreachable: the root is always last")


def uncarried(sandbox: Sandbox, entries: Entries) -> list[tuple[str, str]]:
    """(path, why) for each path of the working copy's git tree that is not in the judge's copy
    (`entries`): what makes the recorded tree differ from the certified one before any code ran.
    Asked only once the trees differ (one host git listing)."""
    try:
        listed = sandbox.git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    except ContentError:  # the listing itself refused (GitError is one): nothing to name
        return []
    out = []
    for path in sorted(p for p in set(listed) if p and p not in entries):
        why = _why(sandbox.workdir / path, path)
        if why:
            out.append((path, why))
    return out


def _why(where: os.PathLike[str], path: str) -> str:
    """Why the judge's copy does not hold `path`; "" when it is not in the working copy at all
    (an index entry of a deleted file)."""
    if "__pycache__" in path.split("/") or path.endswith(".pyc"):
        return (
            "compiled Python, which the judge's copy never holds (it would run bytecode no check read); "
            "an ignore rule of the working copy lets it into the tree"
        )
    try:
        st = os.lstat(where)
    except FileNotFoundError:  # host git prints an undecodable name's bytes as U+FFFD: no such path
        return "its name is not valid UTF-8, which the judge's copy cannot name" if "\ufffd" in path else ""
    except OSError as e:
        return f"the harness cannot read it ({e.strerror})"
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        return "not a file or a link"
    if st.st_size > COPY_LIMIT:
        return f"{st.st_size} bytes, past the {COPY_LIMIT} bytes a judge's copy holds"
    return f"not copied: the judge's copy holds {COPY_LIMIT} bytes in all, or the file was unreadable"


def refuse(
    log: EventLog,
    turn: int,
    step_id: str,
    certified: str,
    found: str,
    when: str,
    odd: Sequence[tuple[str, str]] = (),
) -> outcomes.TrialFailed:
    """Log the difference as a policy violation, with its cause; the failure to raise."""
    tree = f"the working copy's tree {found or '(unreadable)'} {when} is not the tree the judge certified, {certified}"
    if odd:
        named = "; ".join(f"{path!r}: {why}" for path, why in odd[:_NAMED])
        more = f" (and {len(odd) - _NAMED} more)" if len(odd) > _NAMED else ""
        detail = (
            f"{step_id}: {tree}: the working copy holds {len(odd)} path(s) the judge's copy cannot carry, "
            f"so what the judge checked is not what would be recorded: {named}{more}. "
            "Remove them from the working copy"
        )
    else:
        detail = f"{step_id}: {tree}: code under test or a later tool call changed the working copy"
    log.append(ev.PolicyViolation(turn=turn, tool="(certification)", detail=detail))
    return outcomes.failure("uncertified_tree", detail)


def after_check(
    sandbox: Sandbox, log: EventLog, turn: int, step_id: str, certified: str, entries: Entries | None = None
) -> None:
    """Raise `uncertified_tree` unless the working copy is still the certified tree (`entries`:
    the judge's copy, to name what it could not carry)."""
    found = sandbox.tree_sha()
    if found != certified:
        odd = uncarried(sandbox, entries) if entries is not None else []
        raise refuse(log, turn, step_id, certified, found, "after the check", odd)


def hold(
    sandbox: Sandbox, log: EventLog, turn: int, step_id: str, certified: str, entries: Entries | None = None
) -> None:
    """The next commit of the sandbox must be `certified` (WorkingCopy.commit asks `committed`
    with the tree it is about to commit, which raises on a difference, and again with the commit
    made, which is logged as a `commit` event)."""

    def committed(tree: str, commit: str) -> None:
        if tree != certified:
            odd = uncarried(sandbox, entries) if entries is not None else []
            raise refuse(log, turn, step_id, certified, tree, "at the step's commit", odd)
        if commit:
            log.append(ev.Commit(turn=turn, step=step_id, commit=commit, tree=tree, certified=certified))

    sandbox.hold(certified, committed)
