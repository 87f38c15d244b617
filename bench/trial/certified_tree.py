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
(bench/core/outcomes.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from bench.core import outcomes
from bench.eventlog.events import EventLog
from bench.sandbox.base import Sandbox
from ctxlog import events as ev

_MODES = {"file": b"100644", "exec": b"100755", "link": b"120000"}


def _obj(kind: bytes, data: bytes) -> bytes:
    return hashlib.sha1(kind + b" " + str(len(data)).encode() + b"\0" + data).digest()


def tree_of(entries: Mapping[str, tuple[str, bytes]]) -> str:
    """The tree `git write-tree` makes of a judge's copy's entries (judge.tree_entries: path ->
    (kind, data)); an entry below another's path is not in the copy (judge._placed), so not here."""
    placed = {p: e for p, e in entries.items()
              if not any("/".join(p.split("/")[:k]) in entries for k in range(1, p.count("/") + 1))}
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


def refuse(log: EventLog, turn: int, step_id: str, certified: str, found: str, when: str) -> outcomes.TrialFailed:
    """Log the difference as a policy violation; the failure to raise."""
    detail = (f"{step_id}: the working copy's tree {found or '(unreadable)'} {when} is not the tree the judge "
              f"certified, {certified}: code under test or a later tool call changed the working copy")
    log.append(ev.PolicyViolation(turn=turn, tool="(certification)", detail=detail))
    return outcomes.failure("uncertified_tree", detail)


def after_check(sandbox: Sandbox, log: EventLog, turn: int, step_id: str, certified: str) -> None:
    """Raise `uncertified_tree` unless the working copy is still the certified tree."""
    found = sandbox.tree_sha()
    if found != certified:
        raise refuse(log, turn, step_id, certified, found, "after the check")


def hold(sandbox: Sandbox, log: EventLog, turn: int, step_id: str, certified: str) -> None:
    """The next commit of the sandbox must be `certified` (WorkingCopy.commit asks `committed`
    with the tree it is about to commit, which raises on a difference, and again with the commit
    made, which is logged as a `commit` event)."""
    def committed(tree: str, commit: str) -> None:
        if tree != certified:
            raise refuse(log, turn, step_id, certified, tree, "at the step's commit")
        if commit:
            log.append(ev.Commit(turn=turn, step=step_id, commit=commit, tree=tree, certified=certified))
    sandbox.hold(certified, committed)
