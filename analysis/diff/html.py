"""The diff page: two trials side by side, turn by turn, as one self-contained HTML file.

No network and no external assets (inline CSS, a few lines of inline JS, inline SVG), so
the page reads the same from disk, from a report directory and inside the MLflow UI's
artifact viewer. Long outputs are cut to a head and a tail inside collapsed <details>, so
a 300-turn trial stays a page of a few MB; the event log keeps the full text.
"""

from __future__ import annotations

import json
from pathlib import Path

from analysis.diff import mismatch
from analysis.diff.sections import COLORS, MARKS, chart, esc, short, summary
from analysis.diff.trajectory import Diff, Trajectory
from analysis.load import labels

PREVIEW, CAP = 150, 1200
_HIDDEN = {"message", "context", "trial_start", "trial_end"}  # shown elsewhere on the page
_COUNTED = ("compaction", "context_truncation", "drift", "policy_violation", "invariant", "output_truncation",
            "context_overflow", "error")


def fold(text: str, where: str = "", label: str | None = None, prefix: str = "") -> str:
    """A short text inline; a long one as its first line, expandable to a head and a tail."""
    text = str(text or "")
    if len(text) <= PREVIEW and "\n" not in text.strip():
        return prefix + (f"<code>{esc(text)}</code>" if text else '<span class="dim">(empty)</span>')
    body = text
    if len(text) > CAP:
        half = CAP // 2
        body = f"{text[:half]}\n… {len(text) - CAP:,} characters not shown{where} …\n{text[-half:]}"
    first = label if label is not None else short(text.strip().split("\n", 1)[0], 110)
    lines = text.count("\n") + 1
    return (f'<details><summary>{prefix}<code>{esc(first)}</code> <span class="dim">({lines} lines, '
            f"{len(text):,} chars)</span></summary><pre>{esc(body)}</pre></details>")


def args_text(args: object, n: int = 70) -> str:
    """Arguments on one line, each string cut to ``n`` characters (more on the divergent turn)."""
    if not isinstance(args, dict):
        return short(args, n)

    def one(v: object) -> str:
        if isinstance(v, str):
            return short(json.dumps(v, ensure_ascii=False), n)
        if isinstance(v, list):
            return "[" + ", ".join(one(x) for x in v[:4]) + (f", … {len(v) - 4} more" if len(v) > 4 else "") + "]"
        return short(json.dumps(v, ensure_ascii=False), 40)

    return short(", ".join(f"{k}={one(v)}" for k, v in args.items()), n * 4)


def item(kind: str, html: str, cls: str = "", seq: object = None) -> str:
    return f'<div class="ev {cls}" data-kind="{esc(kind)}" title="seq {esc(seq)}">{html}</div>'


def event_html(e: dict, results: dict[str, dict], wide: bool = False) -> str:
    """One record of a turn; unknown kinds are shown generically, never dropped."""
    k, seq = str(e.get("kind")), e.get("seq")
    at = f" (events.jsonl seq {seq})"
    if k == "tool_call":
        res = results.get(str(e.get("call_id")))
        html = f'<span class="tool">{esc(e.get("name"))}</span>(<span class="args">{esc(args_text(e.get("args"), 240 if wide else 70))}</span>)'
        if res is not None:
            ok = res.get("ok")
            badge = '<span class="ok">ok</span> ' if ok else ('<span class="bad">error</span> ' if ok is False else "")
            where = f" (events.jsonl seq {res.get('seq')})"
            html += f'<div class="res">{fold(res.get("output") or "", where, prefix="→ " + badge)}</div>'
        return item(k, html, "call", seq)
    if k == "tool_result":
        return item(k, f'→ <span class="tool">{esc(e.get("name"))}</span> {fold(e.get("output") or "", at)}', "call", seq)
    if k == "model_call":
        if e.get("purpose", "turn") != "turn" or not e.get("content"):
            return ""
        return item(k, fold(e.get("content"), at, prefix='<span class="dim">says:</span> '), "say", seq)
    if k == "check":
        passed = e.get("exit_code") == 0 and not e.get("timed_out")
        verdict = "passed" if passed else ("timed out" if e.get("timed_out") else f"failed (exit {e.get('exit_code')})")
        html = f'<b>check {esc(e.get("step"))} {verdict}</b> <code>{esc(short(e.get("command") or "", 90))}</code>'
        return item(k, html + (f"<div>{fold(e.get('output') or '', at)}</div>" if e.get("output") else ""),
                    "pass" if passed else "fail", seq)
    if k == "step_status":
        return item(k, f'step {esc(e.get("step"))} <b>{esc(e.get("status"))}</b>',
                    "pass" if e.get("status") == "passed" else "fail", seq)
    if k == "step_start":
        note = fold(e.get("drift_note"), at, "drift note shown at the step head") if e.get("drift_note") else ""
        return item(k, f'▶ <b>step {esc(e.get("step"))}</b> starts at commit <code>'
                       f'{esc(str(e.get("repo_commit") or "")[:10])}</code>{note}', "step", seq)
    if k == "compaction":
        return item(k, f'{MARKS[k]} <b>compaction</b>: {_tok(e)}'
                       f'{fold(e.get("summary") or "", at, "summary that replaced the history")}', "warn", seq)
    if k == "head_refresh":
        paths = [str(f[0]) for f in e.get("files") or [] if isinstance(f, list | tuple) and f]
        return item(k, f'files re-read from the tree: <code>{esc(", ".join(paths) or "–")}</code>', "step", seq)
    if k == "context_truncation":
        return item(k, f'{MARKS[k]} <b>context truncation</b>: dropped {esc(e.get("dropped_messages"))} '
                       f"message(s), {_tok(e)}", "warn", seq)
    if k == "drift":
        files = ", ".join(map(str, e.get("files") or [])) or "–"
        return item(k, f'{MARKS[k]} <b>drift</b> {esc(e.get("drift_id") or "")} ({esc(e.get("drift_kind") or "?")}): '
                       f'commit <code>{esc(str(e.get("commit") or "")[:10])}</code> by {esc(e.get("author") or "?")} '
                       f'— {esc(short(e.get("message") or "", 120))}<br>files: <code>{esc(files)}</code>', "warn", seq)
    if k in ("policy_violation", "invariant", "output_truncation", "context_overflow", "error"):
        cls = "fail" if k != "invariant" or e.get("status") in (None, "violated") else ""
        return item(k, f'{MARKS[k]} <b>{esc(k.replace("_", " "))}</b> {_fields(e)}', cls, seq)
    return item(k, f'<span class="dim">{esc(k)}</span> {_fields(e)}', "other", seq)


def _tok(e: dict) -> str:
    def n(v):
        return f"{v:,}" if isinstance(v, int) else esc(v)
    return f"{n(e.get('tokens_before'))} → {n(e.get('tokens_after'))} tokens"


def _fields(e: dict) -> str:
    rest = {k: v for k, v in e.items() if k not in ("seq", "turn", "kind", "prev", "t")}
    return esc(short(", ".join(f"{k}={v if not isinstance(v, dict | list) else json.dumps(v)}"
                               for k, v in rest.items()), 300))


def side_html(t: Trajectory, turn: int, hot: set[int], wide: bool = False) -> str:
    events = [e for e in t.turns.get(turn, []) if e.get("kind") not in _HIDDEN]
    results = {str(e.get("call_id")): e for e in events if e.get("kind") == "tool_result"}
    called = {str(e.get("call_id")) for e in events if e.get("kind") == "tool_call"}
    out = []
    for e in events:
        if e.get("kind") == "tool_result" and str(e.get("call_id")) in called:
            continue
        html = event_html(e, results, wide)
        if html and e.get("seq") in hot:
            html = html.replace('<div class="ev ', '<div class="ev trigger ', 1)
        out.append(html)
    return "".join(out) or '<span class="dim">–</span>'


def card(t: Trajectory, side: str, role: str) -> str:
    o, m = t.outcome, t.meta
    good = o["success"] is True or o["status"] == "success"
    rows = [("run", m.get("run_id") or t.label), ("study", m.get("study")), ("strategy", m.get("strategy")),
            ("arm", m.get("arm")), ("task", f"{m.get('task_family')} seed {m.get('task_seed')}"), ("rep", m.get("rep")),
            ("model", m.get("model")), ("steps passed", o["steps_passed"]), ("turns", o["turns"]),
            ("final tree", str(o["final_tree_sha"])[:12] or "–")]
    counts = {k: sum(1 for e in t.events if e.get("kind") == k and (k != "invariant" or e.get("status") != "ok"))
              for k in _COUNTED}
    events = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n) or "none"
    reason = o["failure_reason"] + (f": {short(o['error'], 160)}" if o["error"] else "")
    return (f'<div class="card" style="border-top-color:{COLORS[side]}"><h2>{side.upper()} · {esc(role)}</h2>'
            f'<div class="verdict {"ok" if good else "bad"}">{esc(o["status"])}'
            f'{" — " + esc(reason) if reason else ""}</div><table>'
            + "".join(f"<tr><th>{k}</th><td>{esc(v if v is not None else '–')}</td></tr>" for k, v in rows)
            + f"<tr><th>events</th><td>{esc(events)}</td></tr></table>"
            + (f'<p class="dim">{t.unreadable} unreadable line(s) skipped</p>' if t.unreadable else "") + "</div>")


def page(d: Diff) -> str:
    roles = {"baseline": ("trial", "its baseline twin"), "rep": ("trial", "another rep of the same cell"),
             "explicit": ("trial", "compared trial")}[d.mode]
    ta, tb = mismatch.actions_by_turn(d.a.events), mismatch.actions_by_turn(d.b.events)
    turns = sorted(set(d.a.turns) | set(d.b.turns))
    tok = {"a": d.a.context_tokens(), "b": d.b.context_tokens()}
    keep = turns[0] if turns else 0
    if d.diverged_at is not None:
        trig = d.attribution.get("trigger_turn")
        keep = min(d.diverged_at - 2, trig if isinstance(trig, int) else d.diverged_at)
    rows, folded = [], []
    for t in turns:
        cls = "row" + (" div" if t == d.diverged_at else "") + (" differ" if ta.get(t) != tb.get(t) else "")
        head = (f'<div class="turn"><a href="#turn-{t}">{t}</a><span class="dim">'
                + "".join(f'<br><span style="color:{COLORS[s]}">{tok[s][t]:,}</span>' for s in ("a", "b")
                          if t in tok[s]) + "</span></div>")
        row = (f'<div class="{cls}" id="turn-{t}">{head}<div class="side">{side_html(d.a, t, d.trigger_seqs.get("a", set()), t == d.diverged_at)}'
               f'</div><div class="side">{side_html(d.b, t, d.trigger_seqs.get("b", set()), t == d.diverged_at)}</div></div>')
        (folded if t < keep else rows).append(row)
    if folded:
        rows.insert(0, f'<details class="same"><summary>turns {turns[0]}–{keep - 1}: the same actions on both sides '
                       f"(expand)</summary>{''.join(folded)}</details>")
    title = f"ctxbench diff — {d.a.label} vs {d.b.label}"
    body = (f"<h1>{esc(title)}</h1>"
            f'<div class="cards">{card(d.a, "a", roles[0])}{card(d.b, "b", roles[1])}</div>'
            f"{summary(d)}<h2>Context tokens per turn</h2>{chart(d.a, d.b, d.diverged_at, d.trigger_seqs)}"
            f'<h2>Turn by turn</h2><p class="dim">Each row is one turn: the model\'s tool calls with their results, '
            f"check verdicts and the events of that turn; the numbers under the turn are the context tokens of A and B. "
            f"Rows whose tool calls differ are marked at the left; the outlined event is the attributed trigger. "
            f'<button onclick="openAll(true)">expand all</button> <button onclick="openAll(false)">collapse all</button>'
            f'</p><div class="grid"><div class="row hdr"><div>turn</div><div style="color:{COLORS["a"]}">A</div>'
            f'<div style="color:{COLORS["b"]}">B</div></div>{"".join(rows)}</div>')
    html = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{_CSS}</style></head><body>{body}<script>{_JS}</script></body></html>\n")
    # A trial of a selected sample says so on its page too (analysis.load.labels), before any content.
    html = labels.stamp(html, labels.banner_html(labels.from_meta(d.a.meta, d.b.meta)))
    # No literal URL anywhere: text quoting one (task code, a model's reply) renders the same
    # through the entity, and the page can be checked for external references by a plain grep.
    return html.replace("://", "&#58;//")


def write_page(d: Diff, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(d), encoding="utf-8")
    return out


_JS = "function openAll(o){document.querySelectorAll('details').forEach(function(d){d.open=o;});}"
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.2em auto;max-width:1500px;padding:0 1em;
color:#222;font-size:14px;line-height:1.4}h1{font-size:1.35em}h2{font-size:1.1em;margin:1.2em 0 .4em}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;word-break:break-word;max-height:28em;overflow:auto;margin:3px 0}
.cards{display:grid;grid-template-columns:1fr 1fr;gap:1em}.card{border:1px solid #ddd;border-top:4px solid;padding:.5em .8em}
.cards>div,.facts>div{min-width:0}.card td{overflow-wrap:anywhere}
@media (max-width:520px){.cards,.facts{grid-template-columns:1fr}}.card h2{margin:.2em 0}.card table{border-collapse:collapse;font-size:13px}.card th{text-align:left;color:#666;
font-weight:normal;padding-right:1em}.verdict{font-weight:bold;margin:.3em 0}.ok{color:#17803d}.bad{color:#c0262d}
.summary{border:2px solid #c0262d;background:#fff6f6;padding:.6em 1em;margin:1em 0}.summary h2{margin-top:.2em}
.facts{display:grid;grid-template-columns:1fr 1fr;gap:1em}.facts ul{margin:.2em 0;padding-left:1.2em}
.dim{color:#777}.chart .grid{stroke:#eee}.chart .ax{font-size:11px;fill:#777}.chart .divline{stroke:#c0262d;
stroke-dasharray:5 3;stroke-width:1.5}.chart .mark{font-size:13px}.chart .mark.hot{font-size:19px;font-weight:bold}
.legend{font-size:12px;color:#555}.divkey{color:#c0262d}
.grid .row{display:grid;grid-template-columns:5.2em 1fr 1fr;border-bottom:1px solid #eee}
.grid .row>div{padding:3px 6px;min-width:0;overflow-wrap:anywhere}.grid .hdr{position:sticky;top:0;background:#fff;
font-weight:bold;border-bottom:2px solid #ccc;z-index:1}.row.differ{box-shadow:inset 4px 0 #e0a800}
.row.div{background:#fff1f1;box-shadow:inset 6px 0 #c0262d}.turn a{color:#444;font-weight:bold;text-decoration:none}.turn{font-size:12px}
.side{border-left:1px solid #eee}.ev{margin:2px 0;padding:1px 4px;border-radius:3px}
.ev.warn{background:#fff4d6}.ev.fail{background:#ffe3e3}.ev.pass{color:#17803d}.ev.step{background:#eef3fb}
.ev.trigger{outline:3px solid #c0262d}.ev .tool{font-weight:600}.ev .args{color:#555}.res{margin-left:1.2em}
details>summary{cursor:pointer}details.same>summary{padding:6px;background:#f3f3f3;color:#555}
"""
