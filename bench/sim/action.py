"""Action: what the simulated engineer does next, from its beliefs alone.

One reply per call, in the order a careful engineer works through a step:
  0. at the step's first turn, maybe look at status and history; before editing, maybe re-read
     (bench/sim/explore.py, each with its rate);
  1. read what it has not seen: the oracle's `reads`, files named in the newest failure of
     this step, a file whose edit came back ERROR, a touched file that visible drift/git
     output names after the copy it holds; a failure naming a file it rewrote whole this step
     sends it to the last committed copy (`git show HEAD:path`): what the rewrite dropped;
  2. edit, once per attempt (redone after an ERROR once the file was re-read, at most
     `max_edit_retries` times): the task's oracle computes the edits over the perceived files
     (competence), and the tidy-ups those edits invite (`Oracle.cleanups`) are done unless a
     recalled constraint covers them -- with `p_tempt` each (temptation, below); with
     `p_edit_error` one of its own edits is left out (bench/sim/competence.py);
  3. submit_step with its own hand-off: the constraints it recalls (harness: "what must later
     steps not undo?"), never a list handed to it.
The harness's check results drive attempts; after `max_attempts` failures it gives up.

Temptation. Where a step's edits invite a tidy-up (code that looks dead in the visible tree),
the engineer does it with `p_tempt` unless it acts on a constraint that covers it: one draw
against `recall.protection` (the best recalled statement naming the cleanup's anchors, whoever
made it). Nothing here knows where the task's traps are. Every decision is reported
(`Reply.decisions`: step, attempt, key, q, p_tempt, done) for the expected success.

Stale edits. Real staleness needs no special code: if the repo moved under the sim (drift)
and only the old block is visible, the oracle edits the old text, and the harness reports
ERROR for a vanished search text or lets a whole-file write clobber the new lines. What the
sim adds is imperfect *memory* of a file ("version confusion"): when the newest visible block
of a file is not recalled (the recall curve of any fact), it works from the previous visible
version, if any: with `p_stale_replace_fail` for search/replace edits (ERROR) and
`p_stale_clobber` for whole-file writes (newer lines overwritten); with no older version a
replace misquotes its search text (ERROR) with `p_stale_replace_fail`.
Recall 1 (the oracle model) never triggers any of it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from typing import Any

from bench.sim import competence, explore
from bench.sim.params import SimParams
from bench.sim.perception import EDIT_TOOLS, START, Beliefs, CallSeen, Pos, Said, result_error
from bench.sim.reading import named_paths
from bench.sim.recall import draw, protection, recalled, recalled_statements
from tasks.common.build import apply_edit
from tasks.common.cleanups import invited
from tasks.spec import Edit, Oracle, StepPlan


@dataclass(frozen=True)
class Reply:
    content: str
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    decisions: tuple[dict[str, Any], ...] = ()  # temptation decisions made for this reply
    slips: tuple[dict[str, Any], ...] = ()  # competence errors made in this reply (bench/sim/competence.py)


def act(b: Beliefs, oracle: Oracle, p: SimParams, seed: int) -> Reply:
    sid = b.step
    if sid is None:
        return Reply("There is no current step in view; nothing to do.")
    mine = [c for c in b.checks if c.step == sid]
    if mine and mine[-1].passed:
        return Reply(f"Step {sid} passed its check.")
    failures = [c for c in mine if not c.passed]
    attempt = len(failures)
    if attempt >= p.max_attempts:
        return Reply(f"giving up on step {sid} after {attempt} failed checks.")
    anchor = max(b.step_pos, failures[-1].pos) if failures else b.step_pos

    view = {path: f.content for path, f in b.perceived().items()}
    try:
        plan = oracle.edits_for(sid, view)
    except KeyError:
        return Reply(f"Step {sid} is not part of this task's plan; nothing to do.")
    after = [c for c in b.calls if anchor < c.pos]
    if explore.first_turn_of_step(b, attempt):
        looks = explore.orient(b, p, seed, sid)
        if looks:
            return Reply(f"Looking at the repository's status and history before step {sid}.", looks)

    reads = _needed_reads(b, plan, b.touches, after, anchor, failures, p)
    if reads:
        return Reply(
            f"Reading {', '.join(r for _, r in reads)} before editing for step {sid}.",
            tuple(
                ("read_file", {"path": r})
                if how == "read"
                else ("git", {"subcommand": "show", "args": [f"HEAD:{r}"]})
                for how, r in reads
            ),
        )

    batches = _batches(after)
    submits = [c for c in after if c.name == "submit_step"]
    if submits:
        # A submit with no check after it: the harness answered it with something else.
        if len(submits) > p.max_edit_retries:
            return Reply(f"Submitted step {sid}; waiting for the harness.")
        return _submit(b, p, seed, sid, attempt)
    redo = bool(batches) and any(_errored(b, c) for c in batches[-1]) and len(batches) <= p.max_edit_retries
    if not batches:
        again = explore.rereads(b, plan, p, seed, sid, attempt, after)
        if again:
            return Reply(
                f"Re-reading {', '.join(again)} before editing for step {sid}.",
                tuple(("read_file", {"path": r}) for r in again),
            )
    if not batches or redo:
        edits, decisions, slipped = _edits(b, oracle, plan, view, p, seed, sid, attempt)
        if edits:
            return Reply(
                f"Editing {', '.join(dict.fromkeys(e.path for e in edits))} for step {sid}.",
                tuple(_tool_call(e) for e in edits),
                decisions,
                slipped,
            )
        if slipped:  # the only edit left out: it submits believing the step done
            return replace(_submit(b, p, seed, sid, attempt), slips=slipped)
    return _submit(b, p, seed, sid, attempt)


def _submit(b: Beliefs, p: SimParams, seed: int, sid: str, attempt: int) -> Reply:
    """The hand-off, from what it recalls. `invariants`: the keep-sentences of this step's own
    instructions; `notes`: what it did, then the standing constraints it recalls from earlier
    (stated invariant lines, its own earlier hand-offs, summaries) -- never the task message's,
    which every context holds anyway. Never empty: asked what later steps must not undo, a model
    always answers something."""
    msg, lo, hi = b.instructions
    own = [st for st in b.said if st.pos.msg == msg and lo <= st.pos.offset < hi]
    new = recalled_statements(p, b, own, seed, sid, attempt)
    older = [
        st
        for st in b.said
        if not st.in_task
        and st.role != "system"
        and st not in own
        and st.norm not in {x.norm for x in new}
        and (st.marked or st.role == "assistant" or st.in_summary)
    ]
    kept = recalled_statements(p, b, older, seed, sid, attempt)
    edited = [c.args.get("path") for c in b.calls if b.step_pos < c.pos and c.name in EDIT_TOOLS]
    did = f"{sid}: edited {', '.join(dict.fromkeys(str(x) for x in edited))}." if edited else f"{sid}: done."
    notes = (
        f"{did} For later steps: " + " ".join(_said(st) for st in kept)
        if kept
        else f"{did} No further constraints for later steps."
    )
    return Reply(
        f"Step {sid} is done; submitting it.",
        (("submit_step", {"notes": notes, "invariants": [st.text for st in new]}),),
    )


def _said(st: Said) -> str:
    return st.text if st.text.endswith((".", "!", "?")) else st.text + "."


def _tool_call(e: Edit) -> tuple[str, dict[str, Any]]:
    if e.kind == "replace":
        return "edit_file", {"path": e.path, "search": e.search, "replace": e.replace}
    if e.kind == "write":
        return "write_file", {"path": e.path, "content": e.content}
    return "delete_file", {"path": e.path}


def _batches(calls: list[CallSeen]) -> list[list[CallSeen]]:
    """Edit calls grouped by the assistant message that made them."""
    groups: dict[int, list[CallSeen]] = {}
    for c in calls:
        if c.name in EDIT_TOOLS:
            groups.setdefault(c.pos.msg, []).append(c)
    return [groups[k] for k in sorted(groups)]


def _result_pos(b: Beliefs, call: CallSeen) -> Pos | None:
    for r in b.results:
        if r.call_id == call.id and call.pos < r.pos:
            return r.pos if result_error(r) else None
    return None


def _errored(b: Beliefs, call: CallSeen) -> bool:
    return _result_pos(b, call) is not None


def _needed_reads(
    b: Beliefs,
    plan: StepPlan,
    touches: tuple[str, ...],
    after: list[CallSeen],
    anchor: Pos,
    failures: list,
    p: SimParams,
) -> list[tuple[str, str]]:
    """(how, path): "read" the current file, or "committed" for its last committed copy."""

    def read_since(path: str, since: Pos) -> bool:
        return any(c.name == "read_file" and c.args.get("path") == path and since < c.pos for c in after)

    def fresh_since(path: str, since: Pos) -> bool:
        newest = b.newest(path)
        return newest is not None and since < newest.pos

    want: list[str] = []
    perceived = b.perceived()
    want += [r for r in plan.reads if r not in perceived and not read_since(r, anchor)]
    # The newest failure of this attempt, as a check result or the header's LAST FAILURE.
    failure_text, failure_pos = "", START
    if failures and anchor <= failures[-1].pos:
        failure_text, failure_pos = failures[-1].output, failures[-1].pos
    header = b.texts[b.step_pos.msg][2][b.step_pos.offset :] if b.step_pos.msg >= 0 else ""
    if "LAST FAILURE:" in header:
        failure_text += "\n" + header.split("LAST FAILURE:", 1)[1].split("<file ", 1)[0]
        failure_pos = max(failure_pos, b.step_pos)
    rewrote = _rewrote(b)
    committed: list[str] = []
    for path in named_paths(failure_text, p.max_failure_reads):
        if not fresh_since(path, failure_pos) and not read_since(path, failure_pos):
            (committed if path in rewrote else want).append(path)
    for batch in _batches(after)[-1:]:
        for c in batch:
            where = _result_pos(b, c)
            target = c.args.get("path")
            if (
                where is not None
                and isinstance(target, str)
                and not fresh_since(target, where)
                and not read_since(target, where)
            ):
                want.append(target)
    # A copy is stale against a drift note only if it is in an earlier message: what one
    # message shows was read at one moment (the ledger brief puts fresh FILES by its note).
    for cue, paths in b.drift:
        for path in paths:
            if (
                path in perceived
                and any(fnmatch.fnmatch(path, g) for g in touches)
                and perceived[path].pos.msg < cue.msg
                and not read_since(path, cue)
            ):
                want.append(path)
    return [("committed", x) for x in dict.fromkeys(committed)] + [("read", x) for x in dict.fromkeys(want)]


def _rewrote(b: Beliefs) -> set[str]:
    """Files this step replaced whole that it had seen before (so they exist in the last commit)."""
    out = set()
    for c in b.calls:
        path = c.args.get("path")
        if (
            c.name == "write_file"
            and b.step_pos < c.pos
            and isinstance(path, str)
            and any(f.pos < c.pos for f in b.files.get(path, ()))
        ):
            out.add(path)
    return out


def _edits(
    b: Beliefs,
    oracle: Oracle,
    plan: StepPlan,
    view: dict[str, str],
    p: SimParams,
    seed: int,
    sid: str,
    attempt: int,
) -> tuple[list[Edit], tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]:
    kinds: dict[str, str] = {}
    for e in plan.edits:
        if e.kind in ("replace", "write"):
            kinds[e.path] = "write" if e.kind == "write" or kinds.get(e.path) == "write" else "replace"
    confused: dict[str, str] = {}
    misquoted: set[str] = set()
    for path, kind in kinds.items():
        newest = b.newest(path)
        if newest is None:
            continue
        key = f"file:{path}@{newest.sha}"
        if recalled(p, key, [newest.pos], b, seed, sid, attempt):
            continue
        damage = p.p_stale_clobber if kind == "write" else p.p_stale_replace_fail
        if draw(seed, sid, attempt, key, "stale") >= damage:
            continue
        older = [f for f in b.files[path] if f.sha != newest.sha and f.pos < newest.pos]
        if older:
            confused[path] = older[-1].content
        elif kind == "replace":
            misquoted.add(path)
    believed = {**view, **confused}
    edits = list(plan.edits)
    if confused:
        remembered = oracle.edits_for(sid, believed).edits
        edits, placed = [], set()
        for e in plan.edits:
            if e.path not in confused:
                edits.append(e)
            elif e.path not in placed:
                placed.add(e.path)
                edits += [m for m in remembered if m.path == e.path]
    tidy, decisions = _tidy_ups(b, oracle, believed, edits, p, seed, sid, attempt)
    edits, slipped = competence.slip(edits, p, seed, sid, attempt)
    edits = [e for e in edits + tidy if not _already_done(e, believed, b)]
    return (
        [_misquote(e) if e.path in misquoted and e.kind == "replace" else e for e in edits],
        decisions,
        (slipped,) if slipped else (),
    )


def _tidy_ups(
    b: Beliefs,
    oracle: Oracle,
    believed: dict[str, str],
    edits: list[Edit],
    p: SimParams,
    seed: int,
    sid: str,
    attempt: int,
) -> tuple[list[Edit], tuple[dict[str, Any], ...]]:
    """The tidy-ups this step's edits invite, each done unless a recalled constraint covers it."""
    after = dict(believed)
    for e in edits:
        apply_edit(after, e)
    paths = tuple(sorted({e.path for e in edits if e.kind != "delete"}))
    out: list[Edit] = []
    decisions = []
    for cleanup in invited(oracle, believed, after, paths):
        if not cleanup.edits:
            continue
        q = protection(p, cleanup.anchors, b)
        done = (
            draw(seed, sid, attempt, cleanup.key, "tempt") < p.p_tempt
            and not draw(seed, sid, attempt, cleanup.key, "protect") < q
        )
        decisions.append(
            {
                "step": sid,
                "attempt": attempt,
                "key": cleanup.key,
                "q": round(q, 6),
                "p_tempt": p.p_tempt,
                "done": done,
            }
        )
        if done:
            out += cleanup.edits
    return out, tuple(decisions)


def _already_done(e: Edit, believed: dict[str, str], b: Beliefs) -> bool:
    """An engineer does not redo an edit the file it sees already shows (retries, re-plans)."""
    content = believed.get(e.path)
    if e.kind == "delete":
        return content is None and e.path in b.deleted
    if content is None:
        return False
    if e.kind == "write":
        return content == e.content
    return e.search not in content and (not e.replace or e.replace in content)


def _misquote(e: Edit) -> Edit:
    """The search text as quoted from an imperfect memory: one whitespace run is off."""
    ws = re.search(r"[ \t]+", e.search)
    search = e.search[: ws.end()] + " " + e.search[ws.end() :] if ws else e.search + " "
    return Edit(path=e.path, kind="replace", search=search, replace=e.replace)
