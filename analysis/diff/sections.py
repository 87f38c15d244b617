"""The head of the diff page: the "Where they part" box (divergent turn, trigger, facts on
one side only, where the repositories first differ) and the context-tokens chart.

The chart is inline SVG rather than a matplotlib PNG: a few milliseconds for 300 turns,
hover titles, and nothing to encode to stay self-contained.
"""

from __future__ import annotations

from analysis import render
from analysis.diff.trajectory import Diff, Trajectory
from ctxlog import events as ev

COLORS = {"a": "#1f6fb4", "b": "#e07b00"}
# Marker per event kind: (glyph drawn at the curve, label in the hover title).
# Glyphs from the fonts every headless Chromium ships with (no emoji font needed).
MARKS = {
    "compaction": "▼",
    "context_truncation": "✂",
    "drift": "◆",
    "policy_violation": "⊘",
    "invariant": "⚠",
    "output_truncation": "…",
    "context_overflow": "▲",
    "error": "✖",
}
W, H, LEFT, RIGHT, TOP, BOTTOM = 960, 220, 56, 12, 14, 30


def _ticks(top: float, n: int = 4) -> list[int]:
    if top <= 0:
        return [0]
    raw = top / n
    mag = 10 ** (len(str(int(raw))) - 1)
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [int(step * i) for i in range(n + 2) if step * i <= top * 1.05]


def chart(a: Trajectory, b: Trajectory, diverged_at: int | None, trigger_seqs: dict[str, set[int]]) -> str:
    curves = {"a": a.context_tokens(), "b": b.context_tokens()}
    turns = [t for c in curves.values() for t in c] or [0]
    tmax = max(max(turns), diverged_at or 0, 1)
    ymax = max([v for c in curves.values() for v in c.values()] or [1]) * 1.08
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(t: float) -> str:
        return f"{LEFT + pw * t / tmax:.1f}"

    def y(v: float, shift: float = 0) -> str:
        return f"{TOP + ph * (1 - v / ymax) + shift:.1f}"

    sides = []
    for side, traj in (("a", a), ("b", b)):
        c = curves[side]
        marks = []
        for e in traj.events:
            kind, t = e.kind, e.turn
            if (
                kind not in MARKS
                or t is None
                or (isinstance(e, ev.Invariant) and e.status not in ("", "violated"))
            ):
                continue
            v = c.get(t, c.get(max([k for k in c if k <= t], default=-1), 0))
            marks.append(
                {
                    "x": x(t),
                    "y": y(v, -9 if side == "a" else 13),
                    "glyph": MARKS[kind],
                    "hot": e.seq in trigger_seqs.get(side, ()),
                    "tip": f"{side.upper()} turn {t}: {kind}" + _detail(e),
                }
            )
        sides.append(
            {
                "name": side.upper(),
                "color": COLORS[side],
                "marks": marks,
                "points": " ".join(f"{x(t)},{y(v)}" for t, v in sorted(c.items())),
            }
        )
    yticks = _ticks(ymax)
    return (
        render.templates("analysis.diff")
        .get_template("chart.svg.j2")
        .render(
            W=W,
            H=H,
            LEFT=LEFT,
            RIGHT=RIGHT,
            TOP=TOP,
            ph=ph,
            MARKS=MARKS,
            sides=sides,
            diverged_at=diverged_at,
            yticks=[(y(v), f"{v:,}") for v in yticks],
            y_label=[y(v, 4) for v in yticks],
            xticks=[(x(t), t) for t in _ticks(tmax, 8)],
            divline=None if diverged_at is None else x(diverged_at),
        )
    )


def _detail(e: ev.Event) -> str:
    if isinstance(e, ev.Compaction | ev.ContextTruncation):
        return f" ({e.tokens_before} → {e.tokens_after} tokens)"
    if isinstance(e, ev.Drift):
        return f" ({e.drift_kind} {e.commit[:10]})"
    return ""


def short(value: object, n: int = 150) -> str:
    """One line, at most ``n`` characters."""
    text = " ".join(str(value).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _shas_by_path(facts: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, path in facts.items():
        if key.startswith("file:"):
            out.setdefault(path, []).append(key.rsplit("@", 1)[1])
    return out


def _facts(facts: dict[str, str], other: dict[str, str], label: str) -> list[dict]:
    """Constraints first (what a lost summary line costs), then file versions grouped by path."""
    items: list[dict] = [
        {"inv": k, "text": short(v, 200)} for k, v in sorted(facts.items()) if k.startswith("inv:")
    ]
    seen = _shas_by_path(other)
    items += [
        {"inv": None, "path": path, "shas": shas, "there": seen.get(path), "label": label}
        for path, shas in sorted(_shas_by_path(facts).items())
    ]
    return items


def summary(d: Diff) -> str:
    r = d.attribution
    side = {"a": "A", "b": "B", "both": "both A and B"}.get(
        str(r.get("trigger_in")), str(r.get("trigger_in"))
    )
    only_in = (
        None
        if d.only_in is None
        else {
            "a": _facts(d.only_in["a"], d.only_in["b"], "B"),
            "b": _facts(d.only_in["b"], d.only_in["a"], "A"),
        }
    )
    return (
        render.templates("analysis.diff")
        .get_template("summary.html.j2")
        .render(
            t=d.diverged_at,
            trigger=r.get("trigger"),
            trigger_turn=r.get("trigger_turn"),
            trigger_side=side,
            lag=r.get("lag_turns"),
            only_in=only_in,
            tree=d.tree and {"final": False, **d.tree},
            heads=bool(d.a.step_heads() and d.b.step_heads()),
        )
    )
