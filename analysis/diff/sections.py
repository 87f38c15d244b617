"""The head of the diff page: the "Where they part" box (divergent turn, trigger, facts on
one side only, where the repositories first differ) and the context-tokens chart.

The chart is inline SVG rather than a matplotlib PNG: a few milliseconds for 300 turns,
hover titles, and nothing to encode to stay self-contained.
"""

from __future__ import annotations

from html import escape

from analysis.diff.trajectory import Diff, Trajectory, turn_of

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
    out.append(f'<text x="{LEFT - 6}" y="{H - 10}" class="ax" text-anchor="end">turn</text>')
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


def esc(value: object) -> str:
    return escape(str(value))


def short(value: object, n: int = 150) -> str:
    """One line, at most ``n`` characters."""
    text = " ".join(str(value).split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _trigger_text(d: Diff) -> str:
    r = d.attribution
    if d.diverged_at is None:
        return "The two trials make the same tool calls at every turn."
    t = r.get("trigger_turn")
    if t is None:
        return (f"Trigger: <b>{esc(r.get('trigger'))}</b> — no compaction, context truncation or drift at or "
                "before this turn in either log.")
    side = {"a": "A", "b": "B", "both": "both A and B"}.get(str(r.get("trigger_in")), str(r.get("trigger_in")))
    return (f'Attributed to <b>{esc(r.get("trigger"))}</b> at <a href="#turn-{t}">turn {t}</a> in {esc(side)}, '
            f"{r.get('lag_turns')} turn(s) before (the nearest such event at or before the divergent turn; "
            "the same rule as the report's mismatch attribution).")


def _shas_by_path(facts: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, path in facts.items():
        if key.startswith("file:"):
            out.setdefault(path, []).append(key.rsplit("@", 1)[1])
    return out


def _facts_list(facts: dict[str, str], other: dict[str, str], label: str) -> str:
    """Constraints first (what a lost summary line costs), then file versions grouped by path."""
    items = [f"<li><code>[{esc(k)}]</code> {esc(short(v, 200))}</li>" for k, v in sorted(facts.items())
             if k.startswith("inv:")]
    seen = _shas_by_path(other)
    for path, shas in sorted(_shas_by_path(facts).items()):
        there = seen.get(path)
        items.append(f"<li>file <code>{esc(path)}</code> " + ", ".join(f"@<code>{esc(s)}</code>" for s in shas)
                     + (f' <span class="dim">({label} sees @{esc(", @".join(there))})</span>' if there else
                        f' <span class="dim">({label} has no copy)</span>') + "</li>")
    shown = items[:60] + ([f'<li class="dim">… and {len(items) - 60} more</li>'] if len(items) > 60 else [])
    return f"<ul>{''.join(shown)}</ul>" if items else '<p class="dim">nothing</p>'


def _tree_text(d: Diff) -> str:
    tr = d.tree
    if tr is None and not (d.a.step_heads() and d.b.step_heads()):
        return '<span class="dim">The logs hold no step heads to compare the repositories by.</span>'
    if tr is None:
        return "The repositories are the same at every step head both trials reached, and so are the final trees."
    if tr.get("final"):
        return (f"Same commit at every common step head; the final trees differ: A <code>{esc(tr['commit_a'][:12])}"
                f"</code>, B <code>{esc(tr['commit_b'][:12])}</code>.")
    files = ", ".join(f"<code>{esc(p)}</code>" for p in tr["files"][:20]) or "none of the step's files"
    return (f"The repositories first differ at the head of step <b>{esc(tr['step_a'])}</b>"
            + (f" / <b>{esc(tr['step_b'])}</b>" if tr["step_b"] != tr["step_a"] else "")
            + f' (A <a href="#turn-{tr["turn_a"]}">turn {tr["turn_a"]}</a>, commit <code>{esc(tr["commit_a"][:10])}'
            f'</code>; B <a href="#turn-{tr["turn_b"]}">turn {tr["turn_b"]}</a>, commit <code>'
            f'{esc(tr["commit_b"][:10])}</code>). Step files whose contents differ: {files}.')


def summary(d: Diff) -> str:
    t = d.diverged_at
    head = (f'First divergent turn: <a href="#turn-{t}"><b>turn {t}</b></a> (the first turn whose tool calls differ).'
            if t is not None else "No divergent turn.")
    out = [f'<div class="summary"><h2>Where they part</h2><p>{head} {_trigger_text(d)}</p>']
    if t is not None:
        if d.only_in is None:
            out.append('<p class="dim">The contexts of that turn cannot be rebuilt from the logs (a context or '
                       "message record is missing), so the facts they hold are not compared.</p>")
        elif not d.only_in["a"] and not d.only_in["b"]:
            out.append(f"<p>Both model-visible contexts at turn {t} hold the same standing constraints and file "
                       "versions: the difference lies elsewhere in the context, or in the model's own draw "
                       "(reps of a cell sample with different seeds).</p>")
        else:
            out.append(f"<p>Facts in the model-visible context at turn {t} (standing constraints "
                       "<code>[inv:ID]</code> and file versions by path and sha) present on one side only:</p>"
                       f'<div class="facts"><div><b>only in A</b>{_facts_list(d.only_in["a"], d.only_in["b"], "B")}'
                       f'</div><div><b>only in B</b>{_facts_list(d.only_in["b"], d.only_in["a"], "A")}</div></div>')
    out.append(f"<p>{_tree_text(d)}</p></div>")
    return "".join(out)
