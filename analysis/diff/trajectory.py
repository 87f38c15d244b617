"""One trial's trajectory, read from its ``events.jsonl`` alone, and two of them compared.

The log is read by the one reader (ctxlog/reader.py) into its typed events (ctxlog/events.py):
events grouped by turn, the model-visible context of a turn rebuilt from its ``context`` event
(the shas of ``message`` events, each logged once); what is read here is the facts that context
holds -- standing constraints (``[inv:ID] text`` lines) and file versions (``<file path=".."
sha="..">`` blocks whose body still matches its sha).

Two trajectories compare (``compare``) by the first turn whose tool calls differ and its
trigger -- analysis/diff/mismatch.py's rule, so the diff page and the report agree -- the facts
one context held at that turn and the other did not, and the first step head at which the
two repositories differ.

Reading is tolerant: other engineers add event kinds and fields while this code stands
still, and a killed trial may end on a half-written line. Unknown kinds are kept (as
``ctxlog.events.Unknown``), missing fields read as the schema's defaults, and an unreadable
line is counted, not fatal.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any

from analysis.diff import mismatch
from analysis.diff.mismatch import read_log
from ctxlog import events as ev
from ctxlog.blobs import DIR, Source, directory
from ctxlog.reader import Log

# The harness's render markers (bench/core/render.py), re-stated: analysis must not import it.
_INV_RE = re.compile(r"^\[inv:(?P<id>[A-Za-z0-9_.-]+)\] (?P<text>.+)$", re.M)
_FILE_RE = re.compile(r'<file path="(?P<path>[^"]+)" sha="(?P<sha>[0-9a-f]+)">\n(?P<body>.*?)</file>', re.S)


@dataclass
class Trajectory:
    """A trial's log and what the diff reads from it. ``meta`` holds the trial's identity
    (strategy, arm, task_family, task_seed, rep, study, model, run_id) from MLflow tags or the
    trial directory's config, falling back to the log's ``trial_start``. ``source`` is the log,
    read, or its records (tests build those by hand)."""

    label: str
    source: InitVar[Log | Iterable[dict]]
    meta: dict[str, Any] = field(default_factory=dict)
    log: Log = field(init=False)
    turns: dict[int, list[ev.Event]] = field(init=False)

    def __post_init__(self, source: Log | Iterable[dict]) -> None:
        self.log = Log.read(source)
        self.turns = self.log.by_turn
        start = self.log.start
        family, _, seed = start.task_id.partition("/")
        for key, value in (
            ("strategy", start.strategy),
            ("arm", start.arm),
            ("rep", start.rep),
            ("model", start.model),
            ("task_family", family),
            ("task_seed", seed),
        ):
            if self.meta.get(key) in (None, "") and value not in (None, ""):
                self.meta[key] = value

    @property
    def events(self) -> list[ev.Event]:
        return self.log.events

    @property
    def unreadable(self) -> int:
        return self.log.unreadable

    @classmethod
    def from_text(
        cls, text: str, label: str, meta: dict | None = None, blobs: Source | None = None
    ) -> Trajectory:
        return cls(label, read_log(text, blobs), dict(meta or {}))

    @classmethod
    def from_path(cls, path: Path, label: str | None = None, meta: dict | None = None) -> Trajectory:
        return cls.from_text(
            path.read_text(encoding="utf-8", errors="replace"),
            label or str(path),
            meta,
            directory(path.parent / DIR),
        )

    # -- outcome ------------------------------------------------------------------------
    @property
    def outcome(self) -> dict[str, Any]:
        """status, success, failure_reason, steps_passed, final tree: trial_end first, then tags."""
        end, m = self.log.end, self.meta
        error = self.log.last(ev.Error)
        if end is not None:
            return {
                "status": end.status or m.get("status") or "unknown",
                "success": end.success,
                "failure_reason": end.failure_reason or m.get("failure_reason") or "",
                "steps_passed": end.steps_passed,
                "turns": end.turn,
                "final_tree_sha": end.final_tree_sha or m.get("final_tree_sha") or "",
                "error": error.detail if error else "",
            }
        # No trial_end (a killed trial): what the MLflow tags say, else that it never finished.
        return {
            "status": m.get("status") or "unfinished",
            "success": str(m.get("success", "")).strip() in ("1", "1.0", "True", "true")
            if "success" in m
            else None,
            "failure_reason": m.get("failure_reason") or "",
            "steps_passed": m.get("steps_passed"),
            "turns": max(self.turns) + 1 if self.turns else 0,
            "final_tree_sha": m.get("final_tree_sha") or "",
            "error": error.detail if error else "",
        }

    # -- contexts -----------------------------------------------------------------------
    def context_tokens(self) -> dict[int, int]:
        """Tokens of the model-visible context of each turn (the turn's own call, not a summariser's)."""
        return {
            e.turn: e.tokens for e in self.log.of(ev.Context) if e.turn is not None and e.purpose == "turn"
        }

    def context_at(self, turn: int) -> list[dict] | None:
        """The messages the model saw when it acted at ``turn`` (its last turn context at or
        before that turn); None when the log has no such context or lacks a message."""
        found = self.log.context_at(turn)
        return list(found) if found is not None else None

    # -- the repository ------------------------------------------------------------------
    def step_heads(self) -> list[dict]:
        """step_start records in order: step, turn, commit, and the step's files by path -> sha."""
        out = []
        for e in self.log.of(ev.StepStart):
            files = {
                str(item[0]): content_sha(str(item[1]))
                for item in e.files
                if isinstance(item, list | tuple) and len(item) == 2
            }
            out.append(
                {"step": e.step, "turn": e.turn, "commit": e.repo_commit, "files": files, "seq": e.seq}
            )
        return out


def content_sha(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:12]


def visible_text(message: dict) -> str:
    """What a model reads in a message: its content and its tool calls' string arguments
    (a model sees its own earlier hand-off notes and invariants)."""
    parts = [str(message.get("content") or "")]
    for call in message.get("tool_calls") or []:
        args = call.get("args") if isinstance(call, dict) else None
        for v in (args or {}).values():
            if isinstance(v, str):
                parts.append(v)
            elif isinstance(v, list):
                parts.extend(x for x in v if isinstance(x, str))
    return "\n".join(parts)


def facts(messages: list[dict]) -> dict[str, str]:
    """The facts a context holds: ``inv:ID`` -> its text, ``file:PATH@SHA`` -> PATH.

    A file block whose body no longer matches its sha (cut by a summariser or by the log's
    output cap) is not a version the model could edit against, so it is not counted.
    """
    out: dict[str, str] = {}
    for m in messages:
        text = visible_text(m)
        for inv in _INV_RE.finditer(text):
            out.setdefault(f"inv:{inv.group('id')}", inv.group("text").strip())
        for f in _FILE_RE.finditer(text):
            body = f.group("body")
            if f.group("sha") in (content_sha(body), content_sha(body[:-1]) if body.endswith("\n") else None):
                out[f"file:{f.group('path')}@{f.group('sha')}"] = f.group("path")
    return out


# -- two trajectories ---------------------------------------------------------------------
@dataclass
class Diff:
    a: Trajectory
    b: Trajectory
    mode: str  # baseline | rep | explicit
    diverged_at: int | None
    attribution: dict[str, Any]
    trigger_seqs: dict[str, set[int]] = field(default_factory=dict)  # side -> seqs of the trigger events
    only_in: dict[str, dict[str, str]] | None = None  # side -> facts in its context, absent from the other's
    tree: dict[str, Any] | None = None  # first step head whose commit differs


def compare(a: Trajectory, b: Trajectory, mode: str = "explicit") -> Diff:
    res = mismatch.compare_logs(a.log, b.log)
    turn = res.pop("diverged_at")
    d = Diff(a, b, mode, turn, res)
    kinds = set(str(res.get("trigger") or "").split("+")) & set(mismatch.TRIGGER_KINDS)
    sides = {"a": ["a"], "b": ["b"], "both": ["a", "b"]}.get(res.get("trigger_in") or "", [])
    for side in sides:
        traj = a if side == "a" else b
        found = [e for e in traj.turns.get(res["trigger_turn"], []) if e.kind in kinds]
        if found:  # the nearest: the last of its turn (mismatch.attribute orders by seq too)
            d.trigger_seqs[side] = {max(e.seq for e in found)}
    if turn is not None:
        ca, cb = a.context_at(turn), b.context_at(turn)
        if ca is not None and cb is not None:
            fa, fb = facts(ca), facts(cb)
            d.only_in = {
                "a": {k: v for k, v in fa.items() if k not in fb},
                "b": {k: v for k, v in fb.items() if k not in fa},
            }
    d.tree = first_tree_difference(a, b)
    return d


def first_tree_difference(a: Trajectory, b: Trajectory) -> dict[str, Any] | None:
    """The first step head at which the two repositories differ (commits are made with
    fixed dates, so equal trees and histories give equal shas), and the step's files that differ."""
    ha, hb = a.step_heads(), b.step_heads()
    for i, (x, y) in enumerate(zip(ha, hb, strict=False)):
        if x["commit"] != y["commit"] or x["step"] != y["step"]:
            paths = sorted(
                p for p in set(x["files"]) | set(y["files"]) if x["files"].get(p) != y["files"].get(p)
            )
            return {
                "index": i,
                "step_a": x["step"],
                "step_b": y["step"],
                "turn_a": x["turn"],
                "turn_b": y["turn"],
                "commit_a": x["commit"],
                "commit_b": y["commit"],
                "files": paths,
            }
    ta, tb = a.outcome["final_tree_sha"], b.outcome["final_tree_sha"]
    if ta and tb and ta != tb:
        return {"index": min(len(ha), len(hb)), "final": True, "commit_a": ta, "commit_b": tb, "files": []}
    return None
