"""Markdown and HTML rendering for the report: number formats that always carry n, markdown
tables and the HTML page (their templates in analysis/templates/, jinja2)."""

from __future__ import annotations

import base64
import functools
import math
import numbers
import re
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup


def emit(text: str, out: Path | None) -> None:
    """A command's page: written to `out` (its folder made) when one is given, and printed."""
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    print(text)


@functools.cache
def templates(package: str) -> jinja2.Environment:
    """The jinja2 templates of an analysis room (``<package>/templates/``): a field the page
    names and the code does not give is an error (StrictUndefined), never an empty cell; HTML
    templates (``*.html.j2``, ``*.svg.j2``) escape what they print, markdown ones do not."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(("html.j2", "svg.j2"), default_for_string=False),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


_TEXT = templates("analysis")


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
    """A markdown table; ``formats`` maps a column to a callable producing its text (others: `num`).
    A column added to the frame is a column of the table: nothing else to change."""
    if frame is None or frame.empty:
        return _TEXT.get_template("table.md.j2").render(header=[], rows=[])
    formats = formats or {}
    cols = list(frame.columns)
    # iterrows, not itertuples: a row is one Series, so an int column beside float ones prints as
    # the floats do (the tables always printed so).
    rows = [
        [(formats[c](row[c]) if c in formats else num(row[c])).replace("|", "\\|") for c in cols]
        for _, row in frame.iterrows()
    ]
    return _TEXT.get_template("table.md.j2").render(header=[str(c) for c in cols], rows=rows)


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
    return _TEXT.get_template("page.html.j2").render(title=title, body=Markup(body))
