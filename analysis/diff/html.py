"""The diff page: two trials side by side, turn by turn, as one self-contained HTML file.

No network and no external assets (inline CSS, a few lines of inline JS, inline SVG), so
the page reads the same from disk, from a report directory and inside the MLflow UI's
artifact viewer. Long outputs are cut to a head and a tail inside collapsed <details>, so
a 300-turn trial stays a page of a few MB; the event log keeps the full text.
"""

from __future__ import annotations

import json
from pathlib import Path

from markupsafe import Markup

from analysis import render
from analysis.diff import mismatch
from analysis.diff.sections import COLORS, MARKS, chart, short, summary
from analysis.diff.trajectory import Diff, Trajectory
from analysis.load import labels
from ctxlog import events as ev

PREVIEW, CAP = 150, 1200
_HIDDEN = (ev.Message, ev.Context, ev.TrialStart, ev.TrialEnd)  # shown elsewhere on the page
_COUNTED = (
    ev.Compaction,
    ev.ContextTruncation,
    ev.Drift,
    ev.PolicyViolation,
    ev.Invariant,
    ev.OutputTruncation,
    ev.ContextOverflow,
    ev.Error,
)


def head_and_tail(text: str, where: str = "") -> str:
    """A long output cut to its head and tail, saying how much is not shown and where it is."""
    if len(text) <= CAP:
        return text
    half = CAP // 2
    return f"{text[:half]}\n… {len(text) - CAP:,} characters not shown{where} …\n{text[-half:]}"


def args_text(args: object, n: int = 70) -> str:
    """Arguments on one line, each string cut to ``n`` characters (more on the divergent turn)."""
    if not isinstance(args, dict):
        return short(args, n)

    def one(v: object) -> str:
        if isinstance(v, str):
            return short(json.dumps(v, ensure_ascii=False), n)
        if isinstance(v, list):
            return (
                "["
                + ", ".join(one(x) for x in v[:4])
                + (f", … {len(v) - 4} more" if len(v) > 4 else "")
                + "]"
            )
        return short(json.dumps(v, ensure_ascii=False), 40)

    return short(", ".join(f"{k}={one(v)}" for k, v in args.items()), n * 4)


def _thousands(v: object) -> str:
    return f"{v:,}" if isinstance(v, int) else str(v)


def _refreshed_paths(files: object) -> str:
    return ", ".join(str(f[0]) for f in files or [] if isinstance(f, list | tuple) and f)  # type: ignore[attr-defined]


def _other_fields(e: ev.Event) -> str:
    return short(
        ", ".join(
            f"{k}={v if not isinstance(v, dict | list) else json.dumps(v)}" for k, v in e.fields().items()
        ),
        300,
    )


def _kind(e: ev.Event) -> str:
    """An event's kind; a kind this schema does not know keeps its own name (in `extra`)."""
    return str(e.extra.get("kind", "")) if isinstance(e, ev.Unknown) else e.kind


def _shown(e: ev.Event) -> bool:
    """A model call is shown only as what the model said on an acting turn."""
    return not isinstance(e, ev.ModelCall) or (e.purpose == "turn" and bool(e.content))


def side(t: Trajectory, turn: int, hot: set[int]) -> dict:
    """One side of a turn row: its events (a tool call carries its result), each marked hot when
    it is the attributed trigger."""
    events = [e for e in t.turns.get(turn, []) if not isinstance(e, _HIDDEN)]
    results = {e.call_id: e for e in events if isinstance(e, ev.ToolResult)}
    called = {e.call_id for e in events if isinstance(e, ev.ToolCall)}
    shown = [
        (e, e.seq in hot)
        for e in events
        if _shown(e) and not (isinstance(e, ev.ToolResult) and e.call_id in called)
    ]
    return {"events": shown, "results": results}


def card(t: Trajectory, side: str, role: str) -> dict:
    o, m = t.outcome, t.meta
    rows = [
        ("run", m.get("run_id") or t.label),
        ("study", m.get("study")),
        ("strategy", m.get("strategy")),
        ("arm", m.get("arm")),
        ("task", f"{m.get('task_family')} seed {m.get('task_seed')}"),
        ("rep", m.get("rep")),
        ("model", m.get("model")),
        ("steps passed", o["steps_passed"]),
        ("turns", o["turns"]),
        ("final tree", str(o["final_tree_sha"])[:12] or "–"),
    ]
    counts = {
        c.kind: sum(1 for e in t.log.of(c) if not (isinstance(e, ev.Invariant) and e.status == "ok"))
        for c in _COUNTED
    }
    return {
        "side": side,
        "role": role,
        "color": COLORS[side],
        "status": o["status"],
        "good": o["success"] is True or o["status"] == "success",
        "reason": o["failure_reason"] + (f": {short(o['error'], 160)}" if o["error"] else ""),
        "rows": rows,
        "events": ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n) or "none",
        "unreadable": t.unreadable,
    }


# The page's markup is analysis/diff/templates/ (jinja2, HTML autoescaped, StrictUndefined).
_PAGES = render.templates("analysis.diff")
_PAGES.globals.update(
    PREVIEW=PREVIEW,
    MARKS=MARKS,
    short=short,
    args_text=args_text,
    head_and_tail=head_and_tail,
    thousands=_thousands,
    refreshed_paths=_refreshed_paths,
    other_fields=_other_fields,
    kind_of=_kind,
)
_PAGES.filters["truncate_to"] = lambda text, n: str(text)[:n]


def page(d: Diff) -> str:
    roles = {
        "baseline": ("trial", "its baseline twin"),
        "rep": ("trial", "another rep of the same cell"),
        "explicit": ("trial", "compared trial"),
    }[d.mode]
    ta, tb = mismatch.actions_by_turn(d.a.log), mismatch.actions_by_turn(d.b.log)
    turns = sorted(set(d.a.turns) | set(d.b.turns))
    tok = {"a": d.a.context_tokens(), "b": d.b.context_tokens()}
    keep = turns[0] if turns else 0
    if d.diverged_at is not None:
        trig = d.attribution.get("trigger_turn")
        keep = min(d.diverged_at - 2, trig if isinstance(trig, int) else d.diverged_at)
    rows = [
        {
            "turn": t,
            "cls": "row"
            + (" div" if t == d.diverged_at else "")
            + (" differ" if ta.get(t) != tb.get(t) else ""),
            "tokens": [(COLORS[s], tok[s][t]) for s in ("a", "b") if t in tok[s]],
            "wide": t == d.diverged_at,
            "sides": [
                side(d.a, t, d.trigger_seqs.get("a", set())),
                side(d.b, t, d.trigger_seqs.get("b", set())),
            ],
        }
        for t in turns
    ]
    title = f"ctxbench diff — {d.a.label} vs {d.b.label}"
    html = _PAGES.get_template("page.html.j2").render(
        title=title,
        cards=[card(d.a, "a", roles[0]), card(d.b, "b", roles[1])],
        colors=COLORS,
        summary=Markup(summary(d)),
        chart=Markup(chart(d.a, d.b, d.diverged_at, d.trigger_seqs)),
        folded=[r for r in rows if r["turn"] < keep],
        folded_to=keep - 1,
        rows=[r for r in rows if r["turn"] >= keep],
    )
    # A trial of a selected sample says so on its page too (analysis.load.labels), before any content.
    html = labels.stamp(html, labels.banner_html(labels.from_meta(d.a.meta, d.b.meta)))
    # No literal URL anywhere: text quoting one (task code, a model's reply) renders the same
    # through the entity, and the page can be checked for external references by a plain grep.
    return html.replace("://", "&#58;//")


def write_page(d: Diff, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(d), encoding="utf-8")
    return out
