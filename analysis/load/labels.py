"""Honest labels: how a study's task seeds were chosen, and what the headline numbers rest on.

A study run with ``study.sample=selected`` (the demo: one seed picked because compaction
pressure changes outcomes there) has its trials tagged so, with a note saying how the seeds
were picked; every page of its report then opens with a banner saying so. Every headline
number states its basis: n trials, task seeds, reps, model and the code version (the
``git_sha`` tag each trial run carries) -- and says so when the trials ran different code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import pandas as pd

from analysis.load import CELL, TASK_KEY

LEVEL_WORD = re.compile(r"\bstrateg(y|ies)\b")


def level_heading(trials: pd.DataFrame) -> str:
    """What a study's level column is headed: `strategy` when every level is one of ctxbench's own
    strategies; `level` (conf/level/'s key) when an external agent plays one of them, since an agent
    is no strategy (docs/agents.md). The frames keep the column `strategy` (and the CSVs and MLflow
    keys with them); only what a reader sees is headed so."""
    agents = trials.get("agent", pd.Series("", index=trials.index)).fillna("")
    return "level" if (agents != "").any() else "strategy"


def headed(text: str, level: str) -> str:
    """A heading or a sentence with the word `strategy` (`strategies`) said as `level` says it."""
    if level == "strategy":
        return text
    return LEVEL_WORD.sub(lambda m: level if m.group(1) == "y" else f"{level}s", text)


def headed_frame(frame: pd.DataFrame, level: str) -> pd.DataFrame:
    """A display table with its columns headed as `level` says (`strategy` -> `level`, ...)."""
    return frame.rename(columns=lambda c: headed(c, level) if isinstance(c, str) else c)


BANNER_CLASS = "ctxbench-sample-banner"  # marks a page that already carries the banner
_STYLE = "border:2px solid #c0262d;background:#fff6f6;color:#222;padding:.6em 1em;margin:1em 0"


@dataclass(frozen=True)
class Sample:
    """Per study: ``selected`` maps a selected study to its note; ``unrecorded`` lists studies
    whose trials carry no study.sample tag (run before it existed), so nobody knows."""

    selected: dict[str, str] = field(default_factory=dict)
    unrecorded: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return "selected" if self.selected else ("not recorded" if self.unrecorded else "unbiased")


def sample(trials: pd.DataFrame) -> Sample:
    selected, unrecorded = {}, []
    kinds = trials.get("study.sample", pd.Series(None, index=trials.index))
    notes = trials.get("study.sample_note", pd.Series(None, index=trials.index))
    for study, idx in trials.groupby("study").groups.items():
        values = set(kinds.loc[idx].dropna())
        if "selected" in values:
            said = [n for n in dict.fromkeys(notes.loc[idx].dropna()) if n]
            selected[str(study)] = "; ".join(said) or "no note recorded"
        elif not values:
            unrecorded.append(str(study))
    return Sample(selected, tuple(unrecorded))


def from_meta(*metas: dict) -> Sample:
    """The sample of the trials behind one page (a diff page's two trials, from their tags)."""
    return Sample(
        {
            str(m.get("study", "?")): str(m.get("study.sample_note") or "no note recorded")
            for m in metas
            if m.get("study.sample") == "selected"
        }
    )


def banner_html(s: Sample) -> str:
    """One block of HTML, empty for an unbiased sample; markdown passes it through as is."""
    if not s.selected:
        return ""
    said = " ".join(
        f"Study <code>{escape(k)}</code>: {escape(v)}{'' if v.endswith(('.', '!', '?')) else '.'}"
        for k, v in s.selected.items()
    )
    return (
        f'<div class="{BANNER_CLASS}" style="{_STYLE}"><strong>Selected sample, not an unbiased one.</strong> '
        f"{said} Its rates, differences and p-values describe these task seeds only; they do not estimate "
        "how the strategies do on tasks at large.</div>"
    )


def stamp(page: str, banner: str) -> str:
    """``page`` with ``banner`` right after its opening body tag (once; a page that has it is kept)."""
    if not banner or BANNER_CLASS in page:
        return page
    body = re.search(r"<body[^>]*>", page)
    return page[: body.end()] + banner + page[body.end() :] if body else banner + page


def stamp_pages(root: Path, banner: str) -> int:
    """Stamp every HTML page under the report directory (sub-pages such as diff pages included)."""
    done = 0
    for path in sorted(root.rglob("*.html")) if banner else ():
        text = path.read_text(encoding="utf-8")
        new = stamp(text, banner)
        if new != text:
            path.write_text(new, encoding="utf-8")
            done += 1
    return done


def short(version: str) -> str:
    dirty = version.endswith("-dirty")
    return version.removesuffix("-dirty")[:10] + ("-dirty" if dirty else "")


def code_versions(trials: pd.DataFrame) -> pd.Series:
    """Trials per code version (the trials' git_sha tag), most trials first."""
    sha = trials.get("git_sha", pd.Series(None, index=trials.index)).fillna("not recorded").astype(str)
    return sha.value_counts()


def _code(trials: pd.DataFrame) -> str:
    v = code_versions(trials)
    if len(v) == 1:
        return f"code {short(v.index[0])}" if v.index[0] != "not recorded" else "code version not recorded"
    listed = ", ".join(f"{short(k)} ({n} trial{'s' if n != 1 else ''})" for k, n in v.items())
    return f"code: {len(v)} versions, {listed} — the trials ran different code"


def _span(values: pd.Series) -> str:
    lo, hi = int(values.min()), int(values.max())
    return str(lo) if lo == hi else f"{lo}–{hi}"


def basis(trials: pd.DataFrame, s: Sample | None = None) -> str:
    """'32 trials; 1 task seed (signature_migration #4) × 2 reps; model sim; code 9fc85be2a1'."""
    if trials.empty:
        return "no trials"
    tasks = trials[list(TASK_KEY[2:])].drop_duplicates()
    named = ", ".join(f"{f} #{k}" for f, k in tasks.itertuples(index=False)) if len(tasks) <= 4 else ""
    reps = trials.groupby([*CELL, *TASK_KEY]).size()
    models = ", ".join(sorted(map(str, trials["model"].dropna().unique())))
    seeds = f"{len(tasks)} task seed{'s' if len(tasks) != 1 else ''}" + (f" ({named})" if named else "")
    out = f"{len(trials)} trials; {seeds} × {_span(reps)} rep(s) per cell; model {models}; {_code(trials)}"
    return out + (f"; sample {(s or sample(trials)).label}")


def cell_basis(trials: pd.DataFrame) -> pd.DataFrame:
    """Per (strategy, arm): trials, task seeds, reps, models and code versions behind its numbers."""
    rows = []
    for (strategy, arm), g in trials.groupby(list(CELL), sort=False):
        reps = g.groupby(list(TASK_KEY)).size()
        rows.append(
            {
                "strategy": strategy,
                "arm": arm,
                "n": len(g),
                "seeds": len(reps),
                "reps": _span(reps),
                "model": ", ".join(sorted(map(str, g["model"].dropna().unique()))),
                "code": ", ".join(short(k) for k in code_versions(g).index),
            }
        )
    return pd.DataFrame(rows, columns=["strategy", "arm", "n", "seeds", "reps", "model", "code"])


def varies(cells: pd.DataFrame) -> bool:
    """Do the cells rest on different seeds, reps, models or code? Then one line cannot say it."""
    return not cells.empty and bool((cells[["seeds", "reps", "model", "code"]].nunique() > 1).any())
