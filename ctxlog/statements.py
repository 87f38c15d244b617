"""Constraint statements in model-visible text: the sentences that say what must be kept.

A constraint protects code by its content, not by an id (docs/design.md, "Models"): whoever
wrote it -- the task, the harness announcing what a step established, the model's own
hand-off, a summary -- a sentence that names what it protects (its anchors) and says to keep
it is evidence the model can act on. Two readers use this one definition:

  - the simulated model (bench/sim/perception.py) finds the statements it may recall, and
  - the harness's `invariant_recall` measure (bench/eventlog/measures.py) asks whether the
    logged context at a step's head still shows each invariant in force.

A statement is a sentence outside file bodies that carries a keep cue ("keep", "stays",
"until", "never", "must not", "read-only", ...). Sentences split at line ends, at sentence
ends, and before each `[inv:ID]` marker, so a hand-off that restates several invariants on
one line yields one statement each. A statement covers a set of anchors when every anchor
occurs in it as a whole word, case-insensitively.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

KEEP_CUE = re.compile(r"\b(keeps?|kept|stays?|until|never|must not|do not|don't|read-only|only at)\b", re.I)
_FILE_BLOCK = re.compile(r'<file path="[^"]*" sha="[0-9a-f]+">\n.*?</file>', re.S)
_SPLIT = re.compile(r"\n|(?<=[.!?])\s+(?=[A-Z\[`])|(?=\[inv:)")
_MARKED = re.compile(r"^\[inv:[A-Za-z0-9_.-]+\] ")


def prose(text: str) -> str:
    """The text with file bodies blanked out (same length, so offsets still index `text`)."""
    return _FILE_BLOCK.sub(lambda m: " " * len(m.group(0)), text)


def words(content: str, calls: Iterable[tuple[str, Mapping[str, Any]]] = ()) -> str:
    """The words of a message, not its code: its content, then the notes and invariants of its
    submit_step calls (a hand-off); edit and write arguments are code, read as files."""
    parts = [content]
    for name, args in calls:
        if name == "submit_step":
            parts += [v for v in (args.get("notes"), *(args.get("invariants") or ())) if isinstance(v, str)]
    return "\n".join(parts)


def statements(text: str) -> list[tuple[int, str]]:
    """(offset in `text`, sentence) for every sentence outside file bodies with a keep cue."""
    return list(_statements(text))


@lru_cache(maxsize=4096)  # both readers read the same messages: every turn, and again in the measure
def _statements(text: str) -> tuple[tuple[int, str], ...]:
    body = prose(text)
    out, start = [], 0
    for m in _SPLIT.finditer(body + "\n"):
        piece = body[start : m.start()]
        lead = len(piece) - len(piece.lstrip(" \t-*>"))
        sentence = piece.strip(" \t-*>").rstrip()
        if sentence and KEEP_CUE.search(sentence):
            out.append((start + lead, sentence))
        start = m.end()
    return tuple(out)


def marked(sentence: str) -> bool:
    """Stated as an invariant line `[inv:ID] text` (the harness's form, or a verbatim copy)."""
    return bool(_MARKED.match(sentence))


def normal(sentence: str) -> str:
    """The content of a sentence: marker dropped, whitespace collapsed, lower case.
    Restatements of the same words share it, wherever and by whomever they were made."""
    return " ".join(_MARKED.sub("", sentence).split()).lower()


def covers(sentence: str, anchors: Iterable[str]) -> bool:
    terms = [a for a in anchors if a]
    return bool(terms) and all(re.search(rf"(?<![\w]){re.escape(a)}(?![\w])", sentence, re.I) for a in terms)
