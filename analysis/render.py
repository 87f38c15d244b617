"""Markdown and HTML rendering for the report: number formats that always carry n.

No tabulate dependency: a markdown table is a few lines of string joining.
"""

from __future__ import annotations

import base64
import functools
import math
import numbers
import re
from pathlib import Path

import jinja2
import pandas as pd


@functools.cache
def templates(package: str) -> jinja2.Environment:
    """The jinja2 templates of an analysis room (``<package>/templates/``): a field the page
    names and the code does not give is an error (StrictUndefined), never an empty cell; HTML
    templates (``*.html.j2``, ``*.svg.j2``) escape what they print, markdown ones do not."""
    return jinja2.Environment(loader=jinja2.PackageLoader(package, "templates"), undefined=jinja2.StrictUndefined,
                              autoescape=jinja2.select_autoescape(("html.j2", "svg.j2"), default_for_string=False),
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def num(x, digits: int = 2) -> str:
    if x is None or x is pd.NA or (isinstance(x, numbers.Real) and math.isnan(x)):
        return "–"
    if isinstance(x, bool | numbers.Integral):
        return f"{int(x):,}"
    if not isinstance(x, numbers.Real):
        return str(x)
    x = float(x)
    ax = abs(x)
    if ax >= 1000:
        return f"{x:,.0f}"
    if ax >= 100:
        return f"{x:.1f}"
    if ax != 0 and ax < 0.01:
        return f"{x:.2g}"
    return f"{x:.{digits}f}"


def pval(p) -> str:
    if p is None or pd.isna(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def rate_ci(rate, lo, hi, n) -> str:
    """0.62 [0.48, 0.74] (n=40): the report's way of never printing a rate without n."""
    if pd.isna(n) or n == 0:
        return "– (n=0)"
    return f"{num(rate)} [{num(lo)}, {num(hi)}] (n={int(n)})"


def est_ci(est, lo, hi, n, digits: int = 2) -> str:
    if pd.isna(n) or n == 0:
        return "– (n=0)"
    return f"{num(est, digits)} [{num(lo, digits)}, {num(hi, digits)}] (n={int(n)})"


def table(frame: pd.DataFrame, formats: dict | None = None) -> str:
    """A markdown table; ``formats`` maps a column to a callable producing its text."""
    if frame is None or frame.empty:
        return "_(no rows)_\n"
    formats = formats or {}
    cols = list(frame.columns)
    lines = ["| " + " | ".join(str(c) for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in frame.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            text = formats[c](v) if c in formats else num(v)
            cells.append(text.replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1200px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:0.8em 0;font-size:0.88em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f3f3f3}
img{max-width:100%;border:1px solid #eee;margin:0.5em 0}code{background:#f5f5f5;padding:0 3px}
"""


def html(markdown_text: str, base: Path, title: str) -> str:
    """Render markdown to a self-contained page: PNGs are inlined as data URIs so the
    page also reads inside the MLflow UI's artifact viewer, where relative links break."""
    import markdown

    body = markdown.markdown(markdown_text, extensions=["tables"])

    def inline(match: re.Match) -> str:
        path = base / match.group(1)
        if not path.is_file():
            return match.group(0)
        data = base64.b64encode(path.read_bytes()).decode()
        return f'src="data:image/png;base64,{data}"'

    body = re.sub(r'src="([^"]+\.png)"', inline, body)
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{_CSS}</style></head><body>\n{body}\n</body></html>\n")
