"""The diff page's chart: context tokens per turn for both trials, events marked (inline SVG).

Inline SVG rather than a matplotlib PNG: it costs a few milliseconds for 300 turns, has
hover titles, and needs no image encoding to stay self-contained.
"""

from __future__ import annotations

from html import escape

from analysis.trajectory import Trajectory, turn_of

COLORS = {"a": "#1f6fb4", "b": "#e07b00"}
# Marker per event kind: (glyph drawn at the curve, label in the hover title).
# Glyphs from the fonts every headless Chromium ships with (no emoji font needed).
MARKS = {"compaction": "▼", "context_truncation": "✂", "drift": "◆", "policy_violation": "⊘",
         "invariant": "⚠", "output_truncation": "…", "context_overflow": "▲", "error": "✖"}
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

    def x(t: float) -> float:
        return LEFT + pw * t / tmax

    def y(v: float) -> float:
        return TOP + ph * (1 - v / ymax)

    out = [f'<svg class="chart" viewBox="0 0 {W} {H}" width="100%" role="img" '
           f'aria-label="context tokens per turn">']
    for v in _ticks(ymax):
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" class="ax" text-anchor="end">{v:,}</text>')
    for t in _ticks(tmax, 8):
        out.append(f'<text x="{x(t):.1f}" y="{H - 10}" class="ax" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{W - RIGHT}" y="{H - 10}" class="ax" text-anchor="end">turn</text>')
    if diverged_at is not None:
        out.append(f'<line x1="{x(diverged_at):.1f}" x2="{x(diverged_at):.1f}" y1="{TOP}" y2="{TOP + ph}" '
                   f'class="divline"><title>first divergent turn {diverged_at}</title></line>')
    for side, traj in (("a", a), ("b", b)):
        c = curves[side]
        if c:
            pts = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in sorted(c.items()))
            out.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[side]}" stroke-width="1.6">'
                       f'<title>{side.upper()}: context tokens per turn</title></polyline>')
        for e in traj.events:
            kind, t = e.get("kind"), turn_of(e)
            if kind not in MARKS or t is None or (kind == "invariant" and e.get("status") not in (None, "violated")):
                continue
            v = c.get(t, c.get(max([k for k in c if k <= t], default=-1), 0))
            offset = -9 if side == "a" else 13
            hot = " hot" if e.get("seq") in trigger_seqs.get(side, ()) else ""
            tip = f"{side.upper()} turn {t}: {kind}" + _detail(e)
            out.append(f'<text x="{x(t):.1f}" y="{y(v) + offset:.1f}" class="mark{hot}" fill="{COLORS[side]}" '
                       f'text-anchor="middle">{MARKS[kind]}<title>{escape(tip)}</title></text>')
    out.append("</svg>")
    legend = " ".join(f'<span style="color:{COLORS[s]}">━ {s.upper()}</span>' for s in ("a", "b"))
    marks = " · ".join(f"{g} {k.replace('_', ' ')}" for k, g in MARKS.items())
    return "".join(out) + f'<div class="legend">{legend} · <span class="divkey">┃</span> first divergent turn · ' \
        f"{marks} (above the line: A, below: B)</div>"


def _detail(e: dict) -> str:
    if e.get("kind") in ("compaction", "context_truncation") and e.get("tokens_before") is not None:
        return f" ({e.get('tokens_before')} → {e.get('tokens_after')} tokens)"
    if e.get("kind") == "drift":
        return f" ({e.get('drift_kind') or ''} {str(e.get('commit') or '')[:10]})"
    return ""
