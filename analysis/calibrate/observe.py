"""What one trial's event log shows about recall, temptation and stale edits: Bernoulli observations.

Each observation is an outcome the model's actions show, with the context evidence the sim's
probability of it depends on (bench/sim/action.py and recall.py, restated):

  handoff  a constraint statement visible at a submit_step, restated in the hand-off or not.
           The sim restates what it recalls: the step's own instruction sentences as
           `invariants`, and standing constraints stated earlier (invariant lines, its own
           notes, summaries; never the task message's) in `notes`. P = recall at the best
           occurrence of the same content in the context.
  tidy     a tidy-up on offer (the harness's `tidy_up` event, bench/trial/tidy_ups.py), taken or
           not. P(taken) = p_tempt * (1 - q), q = the best, over statements covering the
           cleanup's anchors, of recall times (p_paraphrase for a summary's unmarked paraphrase).
  stale_replace  an edit of a file whose newest visible copy is the file's content, no older
           copy in view: it fails ("search text not found") with (1 - recall) * p_stale_replace_fail.
  stale_write    a whole-file write of such a file with an older copy in view: it drops lines the
           newest copy added with (1 - recall) * p_stale_clobber.

Every observation carries the key the sim draws its luck by (seed, step, attempt, content):
trials that share a seed share draws (common random numbers), so `fit` keeps one per key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analysis.calibrate.reading import Context, Said, content_sha, file_blocks, normal, perceive
from ctxlog import events as ev
from ctxlog.reader import Log
from ctxlog.statements import covers

EDITS = ("edit_file", "write_file")
HANDOFF_TAIL = "For later steps: "


@dataclass(frozen=True)
class Obs:
    kind: str  # handoff | tidy | stale_replace | stale_write
    y: bool
    occ: tuple[tuple[float, bool], ...]  # (token position, binds only as a paraphrase) per occurrence
    length: int  # context tokens (messages only, as the sim counts them)
    fresh_from: float  # where the trailing tool results begin
    key: tuple  # the sim's draw key: (seed, step, attempt, what)
    trial: str
    turn: int


def observations(source: Log | list[dict[str, Any]], trial: str) -> list[Obs]:
    log = Log.read(source)  # the one reader: each turn's call with the context it was sent
    seed = log.start.seed if log.start.seed is not None else trial
    sent = {
        c.reply.seq: c.messages
        for c in log.calls
        if c.reply is not None and c.context.purpose == "turn" and c.messages is not None
    }
    last: tuple[int, Context] | None = None  # a reply's tidy_up events follow its model_call
    actual = _Actual()
    results = {(r.turn, r.call_id): r for r in log.of(ev.ToolResult)}
    out: list[Obs] = []
    for e in log.events:
        actual.see(e)
        if isinstance(e, ev.ModelCall) and e.seq in sent:
            ctx = perceive(list(sent[e.seq]))
            last = (_turn(e), ctx)
            calls = e.tool_calls or []
            out += _handoffs(ctx, calls, seed, trial, _turn(e))
            out += _edits(ctx, calls, results, actual, seed, trial, _turn(e))
        elif isinstance(e, ev.TidyUp) and last is not None and last[0] == _turn(e):
            ctx = last[1]
            occ = tuple(
                (st.token, st.in_summary and not st.marked)
                for st in ctx.said
                if covers(st.text, list(e.anchors or ()))
            )
            out.append(
                Obs(
                    "tidy",
                    bool(e.taken),
                    occ,
                    ctx.total,
                    ctx.fresh_from,
                    (seed, ctx.step, ctx.attempt(), "tidy:" + str(e.key)),
                    trial,
                    _turn(e),
                )
            )
    return out


def _turn(e: ev.Event) -> int:
    if e.turn is None:  # the harness numbers every model call and tidy-up: a log without is not one of ours
        raise ValueError(f"a {e.kind} event (seq {e.seq}) has no turn number")
    return e.turn


def _occurrences(ctx: Context, norm: str) -> tuple[tuple[float, bool], ...]:
    return tuple((st.token, False) for st in ctx.said if st.norm == norm)


def _handoffs(ctx: Context, calls: list[dict[str, Any]], seed, trial: str, turn: int) -> list[Obs]:
    submit = next((c for c in calls if c.get("name") == "submit_step"), None)
    if submit is None or ctx.step is None:
        return []
    args = submit.get("args") or {}
    invariants = [str(x) for x in args.get("invariants") or ()]
    notes = str(args.get("notes") or "")
    msg, lo, hi = ctx.instructions
    own = [st for st in ctx.said if st.msg == msg and lo <= st.offset < hi]
    own_norms = {st.norm for st in own}
    older = [
        st
        for st in ctx.said
        if not st.in_task
        and st.role != "system"
        and st.norm not in own_norms
        and (st.marked or st.role == "assistant" or st.in_summary)
    ]
    out, seen = [], set()
    attempt = ctx.attempt()
    found = {normal(x) for x in invariants} | restated(older, notes)
    for st in own + older:
        if st.norm in seen:
            continue
        seen.add(st.norm)
        out.append(
            Obs(
                "handoff",
                st.norm in found,
                _occurrences(ctx, st.norm),
                ctx.total,
                ctx.fresh_from,
                (seed, ctx.step, attempt, "said:" + st.norm),
                trial,
                turn,
            )
        )
    return out


def restated(candidates: list[Said], notes: str) -> set[str]:
    """The contents of `candidates` the notes restate. The sim writes `"{what it did} For later steps: "`
    and then each recalled statement in the order the context first shows it, a full stop added,
    joined by spaces (bench/sim/action.py `_submit`): such notes are read exactly, by splitting that
    tail into candidates in that order; where two splits fit, what they share. Other notes (a real
    model's) count a candidate restated when its content is found in them, unless every place it is
    found lies inside a longer candidate also found there."""
    first: dict[str, str] = {}
    for st in candidates:
        first.setdefault(st.norm, st.text)
    written = [(text if text.endswith((".", "!", "?")) else text + ".", norm) for norm, text in first.items()]
    if HANDOFF_TAIL in notes:
        splits = _splits(notes.split(HANDOFF_TAIL, 1)[1], written)
        if splits:
            return set.intersection(*splits)
    flat = normal(notes)
    spans = {n: [(i, i + len(n)) for i in _find_all(flat, n)] for n in first if n}
    spans = {n: v for n, v in spans.items() if v}
    out = set()
    for n, where in spans.items():
        longer = [sp for m, v in spans.items() if len(m) > len(n) for sp in v]
        if any(not any(a <= i and j <= b for a, b in longer) for i, j in where):
            out.add(n)
    return out


def _find_all(text: str, needle: str) -> list[int]:
    out, i = [], text.find(needle)
    while i >= 0:
        out.append(i)
        i = text.find(needle, i + 1)
    return out


def _splits(tail: str, written: list[tuple[str, str]], limit: int = 16) -> list[set[str]]:
    """Every way (up to `limit`) `tail` is the written sentences, in their order, joined by spaces."""
    out: list[set[str]] = []

    def walk(at: int, after: int, taken: list[str]) -> None:
        if len(out) >= limit:
            return
        if at >= len(tail):
            out.append(set(taken))
            return
        for k in range(after, len(written)):
            text, norm = written[k]
            end = at + len(text)
            if tail.startswith(text, at) and (end == len(tail) or tail[end] == " "):
                walk(end + 1, k + 1, [*taken, norm])

    walk(0, 0, [])
    return out


def _edits(
    ctx: Context,
    calls: list[dict[str, Any]],
    results: dict[tuple, ev.ToolResult],
    actual: _Actual,
    seed,
    trial: str,
    turn: int,
) -> list[Obs]:
    paths: dict[str, str] = {}
    for c in calls:
        path = (c.get("args") or {}).get("path")
        if c.get("name") in EDITS and isinstance(path, str):
            paths[path] = "write" if c["name"] == "write_file" or paths.get(path) == "write" else "replace"
    out = []
    for path, how in paths.items():
        newest = ctx.newest(path)
        if newest is None or actual.sha.get(path) != newest.sha:
            continue  # not in view, or the repository moved since (drift staleness, not memory)
        older = [
            v
            for v in ctx.files[path]
            if v.sha != newest.sha and (v.msg, v.offset) < (newest.msg, newest.offset)
        ]
        key = (seed, ctx.step, ctx.attempt(), f"file:{path}@{newest.sha}")
        occ = ((newest.token, False),)
        if how == "replace" and not older:
            failed = any(
                _failed(results.get((turn, c["id"])))
                for c in calls
                if c.get("name") == "edit_file" and (c.get("args") or {}).get("path") == path
            )
            out.append(Obs("stale_replace", failed, occ, ctx.total, ctx.fresh_from, key, trial, turn))
        elif how == "write" and older:
            added = {ln for ln in newest.content.splitlines() if ln.strip()} - set(
                older[-1].content.splitlines()
            )
            write = next(c for c in calls if c.get("name") == "write_file" and c["args"].get("path") == path)
            if added:
                kept = set(str(write["args"].get("content", "")).splitlines())
                out.append(
                    Obs("stale_write", not added <= kept, occ, ctx.total, ctx.fresh_from, key, trial, turn)
                )
    return out


def _failed(result: ev.ToolResult | None) -> bool:
    return result is not None and not result.ok and "search text" in str(result.output)


class _Actual:
    """The sha of each file's content in the repository, as far as the log shows it (unknown: absent)."""

    def __init__(self) -> None:
        self.sha: dict[str, str] = {}
        self._calls: dict[str, ev.ToolCall] = {}
        self._waiting: dict[str, str] = {}  # edit call id -> path whose new content its tool message shows

    def see(self, r: ev.Event) -> None:
        if isinstance(r, ev.StepStart | ev.HeadRefresh):
            for path, content in r.files or ():
                self.sha[path] = content_sha(content)
        elif isinstance(r, ev.Drift):
            for path, sha in (r.shas or {}).items():
                self._set(path, sha)
        elif isinstance(r, ev.ToolCall):
            self._calls[r.call_id] = r
        elif isinstance(r, ev.ToolResult) and r.ok:
            call = self._calls.get(r.call_id)
            args, name = (call.args or {}, call.name) if call is not None else ({}, None)
            path = str(args.get("path", ""))
            if name == "write_file":
                self._set(path, content_sha(str(args.get("content", ""))))
            elif name == "delete_file":
                self._set(path, None)
            elif name == "edit_file":
                block = [b for b in file_blocks(str(r.output)) if b[1] == path]
                self._set(path, block[-1][2] if block else None)
                if not block:
                    self._waiting[r.call_id] = path
        elif isinstance(r, ev.Message) and r.message.get("role") == "tool":
            shown = self._waiting.pop(str(r.message.get("tool_call_id")), "")  # the path its edit changed
            block = [b for b in file_blocks(str(r.message.get("content") or "")) if b[1] == shown]
            if shown and block and shown not in self.sha:
                self.sha[shown] = block[-1][2]

    def _set(self, path: str, sha: str | None) -> None:
        if sha is None:
            self.sha.pop(path, None)
        else:
            self.sha[path] = sha
        for call_id in [k for k, p in self._waiting.items() if p == path]:
            del self._waiting[call_id]
