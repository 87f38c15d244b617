"""Action: what the simulated engineer does next, from its beliefs alone.

One reply per call, in the order a careful engineer works through a step:
  1. read what it has not seen: the oracle's `reads`, files named in the newest failure of
     this step, a file whose edit came back ERROR, a touched file that visible drift/git
     output names after the copy it holds;
  2. edit, once per attempt (redone after an ERROR once the file was re-read, at most
     `max_edit_retries` times), computed by the task's oracle over perceived files and
     recalled facts;
  3. submit_step with the oracle's hand-off notes.
The harness's check results drive attempts; after `max_attempts` failures it gives up.

Stale edits. Real staleness needs no special code: if the repo moved under the sim (drift)
and only the old block is visible, the oracle edits the old text, and the harness reports
ERROR for a vanished search text or lets a whole-file write clobber the new lines.
What the sim adds is imperfect *memory* of a file ("version confusion"): when the newest
visible block of a file is not recalled (same recall curve as any fact, so a block deep in a
long context is at risk and a just-read one is not), the engineer works from the previous
visible version of that file, if the context holds one: with `p_stale_replace_fail` for
search/replace edits (the old text is gone: ERROR) and `p_stale_clobber` for whole-file
writes (newer lines are overwritten). With no older version to confuse it with, a replace
misquotes its search text (ERROR) with `p_stale_replace_fail`; a write copies faithfully.
Recall 1 (the oracle model) never triggers any of it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

from bench.sim.params import SimParams
from bench.sim.perception import (
    EDIT_TOOLS,
    START,
    Beliefs,
    CallSeen,
    Pos,
    add_task_facts,
    named_paths,
    result_error,
)
from bench.sim.recall import draw, recalled, recalled_fact_ids
from tasks.spec import Edit, StepPlan, TaskSpec


@dataclass(frozen=True)
class Reply:
    content: str
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()


def _end(text: str) -> Reply:
    return Reply(text)


def act(b: Beliefs, task: TaskSpec, p: SimParams, seed: int) -> Reply:
    sid = b.step
    if sid is None:
        return _end("There is no current step in view; nothing to do.")
    try:
        step = task.step(sid)
    except KeyError:
        return _end(f"Step {sid} is not part of this task's plan; nothing to do.")
    mine = [c for c in b.checks if c.step == sid]
    if mine and mine[-1].passed:
        return _end(f"Step {sid} passed its check.")
    failures = [c for c in mine if not c.passed]
    attempt = len(failures)
    if attempt >= p.max_attempts:
        return _end(f"giving up on step {sid} after {attempt} failed checks.")
    anchor = max(b.step_pos, failures[-1].pos) if failures else b.step_pos

    add_task_facts(b, task.facts)
    facts = recalled_fact_ids(p, b, seed, sid, attempt)
    view = {path: f.content for path, f in b.perceived().items()}
    plan = task.oracle.edits_for(sid, view, facts)
    after = [c for c in b.calls if anchor < c.pos]

    reads = _needed_reads(b, plan, step.touches, after, anchor, failures, p)
    if reads:
        return Reply(f"Reading {', '.join(reads)} before editing for step {sid}.",
                     tuple(("read_file", {"path": r}) for r in reads))

    batches = _batches(after)
    submits = [c for c in after if c.name == "submit_step"]
    if submits:
        # A submit with no check after it: the harness answered it with something else.
        if len(submits) > p.max_edit_retries:
            return _end(f"Submitted step {sid}; waiting for the harness.")
        return _submit(sid, plan)
    redo = bool(batches) and any(_errored(b, c) for c in batches[-1]) and len(batches) <= p.max_edit_retries
    if not batches or redo:
        edits = _edits(b, task, plan, view, facts, p, seed, sid, attempt)
        if edits:
            return Reply(f"Editing {', '.join(dict.fromkeys(e.path for e in edits))} for step {sid}.",
                         tuple(_tool_call(e) for e in edits))
    return _submit(sid, plan)


def _submit(sid: str, plan: StepPlan) -> Reply:
    # Never empty notes: asked "what must later steps not undo?", a model always answers.
    notes = plan.notes or f"Step {sid} done; no further constraints for later steps."
    return Reply(f"Step {sid} is done; submitting it.",
                 (("submit_step", {"notes": notes, "invariants": list(plan.invariants)}),))


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


def _needed_reads(b: Beliefs, plan: StepPlan, touches: tuple[str, ...], after: list[CallSeen],
                  anchor: Pos, failures: list, p: SimParams) -> list[str]:
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
    header = b.texts[b.step_pos.msg][2][b.step_pos.offset:] if b.step_pos.msg >= 0 else ""
    if "LAST FAILURE:" in header:
        failure_text += "\n" + header.split("LAST FAILURE:", 1)[1].split("<file ", 1)[0]
        failure_pos = max(failure_pos, b.step_pos)
    for path in named_paths(failure_text, p.max_failure_reads):
        if not fresh_since(path, failure_pos) and not read_since(path, failure_pos):
            want.append(path)
    for batch in _batches(after)[-1:]:
        for c in batch:
            where = _result_pos(b, c)
            target = c.args.get("path")
            if where is not None and isinstance(target, str) and not fresh_since(target, where) \
                    and not read_since(target, where):
                want.append(target)
    # A copy is stale against a drift note only if it is in an earlier message: what one
    # message shows was read at one moment (the ledger brief puts fresh FILES by its note).
    for cue, paths in b.drift:
        for path in paths:
            if path in perceived and any(fnmatch.fnmatch(path, g) for g in touches) \
                    and perceived[path].pos.msg < cue.msg and not read_since(path, cue):
                want.append(path)
    return list(dict.fromkeys(want))


def _edits(b: Beliefs, task: TaskSpec, plan: StepPlan, view: dict[str, str], facts: frozenset[str],
           p: SimParams, seed: int, sid: str, attempt: int) -> list[Edit]:
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
        remembered = task.oracle.edits_for(sid, believed, facts).edits
        edits, placed = [], set()
        for e in plan.edits:
            if e.path not in confused:
                edits.append(e)
            elif e.path not in placed:
                placed.add(e.path)
                edits += [m for m in remembered if m.path == e.path]
    for t in plan.temptations:
        if t.fact_id not in facts and draw(seed, sid, attempt, f"trap:{t.trap_id}", "tempt") < p.p_tempt:
            edits += list(t.edits)
    edits = [e for e in edits if not _already_done(e, believed, b)]
    return [_misquote(e) if e.path in misquoted and e.kind == "replace" else e for e in edits]


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
    search = e.search[:ws.end()] + " " + e.search[ws.end():] if ws else e.search + " "
    return Edit(path=e.path, kind="replace", search=search, replace=e.replace)
