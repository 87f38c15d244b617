"""What recovery cost, and what the context held: per-trial measures from the event log alone.

`trial_measures(records)` is pure over a trial's event records (the list `EventLog.records`
holds, or `events.jsonl` parsed) and is called once by the runner when it records the trial;
`step_curves` adds per-step values to the per-turn curves (MLflow step = turn). They never ask
the model: `invariant_recall` is read from the logged contexts, not from the simulated model.

  first_attempt_passes     steps whose first check passed
  first_attempt_pass_rate  ... over the steps that ran a check
  recovered_failures       steps that failed a check and later passed
  turns_to_recover         turns from each such step's first failed check to its pass, summed
  stale_edits              edit/write calls whose base -- the newest copy of the file the model
                           was shown (in the context of that call, or by an earlier call of the
                           same reply) -- was older than the file's content at the time
  invariant_recall         mean over steps of the share of invariants in force at the step's
                           head (logged with `step_start`) that the step's first context states:
                           a sentence with a keep cue and every anchor (ctxlog/statements.py)
  trap_hazard              where the model logged its temptation decisions (the simulated one
                           does): the sum of p_tempt * (1 - q) over its distinct decisions up to
                           and including the first tidy-up done (while the trial was still at
                           risk). Every tidy-up the tasks invite is a trap, so 1 - the mean of
                           this over a cell is the sim's own expected success there: unbiased,
                           unlike the product of (1 - p_tempt (1 - q)), which a trial that
                           springs a trap early cuts short of its later decisions
  tidy_ups, tidy_up_chances  decisions that did the tidy-up, and all decisions
  success_visible          the verdict without the final acceptance's hidden checks (bench/trial/
                           hidden_checks.py): 1 for a success, and for a trial that failed its final
                           check only on the hidden parts (the visible ones passed); else 0
"""

from __future__ import annotations

from typing import Any

from bench.core.render import content_sha, parse_file_blocks
from ctxlog import events as ev
from ctxlog.reader import Log
from ctxlog.statements import covers, statements, words

EDITS = ("edit_file", "write_file")

Record = dict[str, Any]


def trial_measures(records: list[Record] | Log) -> dict[str, float]:
    log = Log.read(records)
    steps = _checks_by_step(log)
    firsts = [checks[0][1] for checks in steps.values()]
    recovered = [
        (checks, next(i for i, (_, ok) in enumerate(checks) if ok))
        for checks in steps.values()
        if not checks[0][1] and any(ok for _, ok in checks)
    ]
    recall = [share for _, share in _invariant_recall(log)]
    out: dict[str, float] = {
        "first_attempt_passes": float(sum(firsts)),
        "first_attempt_pass_rate": sum(firsts) / len(firsts) if firsts else 0.0,
        "recovered_failures": float(len(recovered)),
        "turns_to_recover": float(sum(checks[i][0] - checks[0][0] for checks, i in recovered)),
        "stale_edits": float(_stale_edits(log)),
        "invariant_recall": sum(recall) / len(recall) if recall else 1.0,
        "success_visible": _success_visible(log),
    }
    decisions = _decisions(log)
    if decisions is not None:
        hazard = 0.0
        for d in decisions.values():  # in the order the model made them
            hazard += float(d["p_tempt"]) * (1.0 - float(d["q"]))
            if d["done"]:
                break
        out.update(
            trap_hazard=hazard,
            tidy_ups=float(sum(bool(d["done"]) for d in decisions.values())),
            tidy_up_chances=float(len(decisions)),
        )
    return out


def step_curves(records: list[Record] | Log, per_turn: list[dict[str, float]]) -> list[dict[str, float]]:
    """`per_turn` rows with `step_invariant_recall` at each step's first turn and
    `step_first_attempt_pass` at the turn of each step's first check."""
    log = Log.read(records)
    rows = [dict(r) for r in per_turn]
    for turn, share in _invariant_recall(log):
        if 0 <= turn < len(rows):
            rows[turn]["step_invariant_recall"] = share
    for checks in _checks_by_step(log).values():
        turn, ok = checks[0]
        if 0 <= turn < len(rows):
            rows[turn]["step_first_attempt_pass"] = float(ok)
    return rows


def _success_visible(log: Log) -> float:
    end = log.first(ev.TrialEnd)
    if end is None:
        return 0.0
    if end.success:
        return 1.0
    final = [c for c in log.of(ev.Check) if c.step == "final"]
    held = final[-1].hidden if final else None
    return float(
        end.failure_reason == "final_check_failed"
        and bool(final[-1].passed)
        and isinstance(held, dict)
        and not held.get("passed")
    )


def _checks_by_step(log: Log) -> dict[str, list[tuple[int, bool]]]:
    out: dict[str, list[tuple[int, bool]]] = {}
    for c in log.of(ev.Check):
        if c.step != "final":
            out.setdefault(str(c.step), []).append((int(c.turn or 0), c.exit_code == 0 and not c.timed_out))
    return out


def _decisions(log: Log) -> dict[tuple, Record] | None:
    seen: dict[tuple, Record] | None = None
    for r in log.of(ev.ModelCall):
        if r.decisions is not None:
            seen = {} if seen is None else seen
            for d in r.decisions:
                seen.setdefault((d["step"], d["attempt"], d["key"]), d)
    return seen


def _prose(message: Record) -> str:
    """The words of a logged message (content and submit_step hand-offs), not its code."""
    return words(
        str(message.get("content") or ""),
        ((str(c.get("name")), c.get("args") or {}) for c in message.get("tool_calls") or ()),
    )


def _invariant_recall(log: Log) -> list[tuple[int, float]]:
    """(turn, share) per step: the in-force invariants its first turn's context states."""
    said: dict[str, list[str]] = {}
    out: list[tuple[int, float]] = []
    pending: list[tuple[str, ...]] | None = None
    for r in log.events:
        if isinstance(r, ev.StepStart) and r.invariants is not None:
            pending = [tuple(anchors) for _, anchors in r.invariants if anchors]
        elif isinstance(r, ev.Context) and r.purpose == "turn" and pending is not None:
            sentences = []
            for sha in r.messages:
                if sha not in said:
                    said[sha] = [s for _, s in statements(_prose(log.messages.get(sha, {})))]
                sentences += said[sha]
            if pending:
                present = sum(any(covers(s, anchors) for s in sentences) for anchors in pending)
                out.append((int(r.turn or 0), present / len(pending)))
            pending = None
    return out


def stale_edits(records: list[Record]) -> int:
    return _stale_edits(Log.from_records(records))


def _stale_edits(log: Log) -> int:
    """Edits whose base was older than the file (see the module docstring). A file's content is
    known from the step head (its touches, read fresh), a drift commit, a write's arguments, and
    the full tool message of a read or an edit (logged when a context first shows it; kept only if
    nothing changed the file in between). A reply's later edits of a file build on its earlier
    ones, so only a reply's first edit of each file is judged; an unknown content is not judged."""
    actual: dict[str, str | None] = {}  # path -> sha of its content now, where the log shows it
    version: dict[str, int] = {}  # path -> how often the log saw it change
    pending: dict[str, tuple[str, int]] = {}  # call id -> (path, version) awaiting its full message
    calls: dict[str, ev.ToolCall] = {}
    shown: dict[str, str] = {}
    judged: set[str] = set()
    blocks: dict[str, list[tuple[str, str]]] = {}  # message sha -> its file blocks (path, sha), parsed once
    stale = 0

    def changed(path: str, sha: str | None) -> None:
        version[path] = version.get(path, 0) + 1
        if sha is None:
            actual.pop(path, None)
        else:
            actual[path] = sha

    for r in log.events:
        if isinstance(r, ev.Message):
            waiting = pending.pop(str(r.message.get("tool_call_id")), None)
            if waiting and version.get(waiting[0]) == waiting[1]:
                block = next(
                    (b for b in parse_file_blocks(str(r.message.get("content") or "")) if b[0] == waiting[0]),
                    None,
                )
                if block:
                    actual[waiting[0]] = block[1]
        elif isinstance(r, ev.StepStart | ev.HeadRefresh):
            for path, content in r.files or ():
                changed(path, content_sha(content))
        elif isinstance(r, ev.Drift):
            for path, sha in (r.shas or {}).items():
                changed(path, sha or None)
        elif isinstance(r, ev.Context) and r.purpose == "turn":
            shown, judged = {}, set()
            for sha in r.messages:  # a context repeats most of the last one's messages
                if sha not in blocks:
                    blocks[sha] = [
                        (path, fsha)
                        for path, fsha, _ in parse_file_blocks(
                            str(log.messages.get(sha, {}).get("content") or "")
                        )
                    ]
                shown.update(blocks[sha])
        elif isinstance(r, ev.ToolCall):
            calls[r.call_id] = r
            path = str((r.args or {}).get("path", ""))
            if r.name in EDITS and path not in judged:
                judged.add(path)
                stale += int(path in shown and path in actual and shown[path] != actual[path])
        elif isinstance(r, ev.ToolResult) and r.ok:
            call = calls.get(r.call_id)
            args, name = (call.args or {}, call.name) if call is not None else ({}, None)
            path = str(args.get("path", ""))
            if name == "write_file":
                changed(path, content_sha(str(args.get("content", ""))))
            elif name in ("edit_file", "delete_file"):
                changed(path, None)
            if name in ("read_file", "edit_file"):
                pending[r.call_id] = (path, version.get(path, 0))
    return stale
