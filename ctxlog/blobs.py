"""Large values of the event log, stored once by content (docs/design.md §6, "Large values").

A string value longer than the trial's threshold (`tracking.blob_chars`) is not written into its
record: its UTF-8 text goes to `blobs/<sha256 of that text>` beside `events.jsonl` (once, however
many records and turns carry it), the record holds a short placeholder in its place, and the
record's envelope field `blobs` lists where each placeholder is and which blob it stands for:

    {"seq": 7, "kind": "tool_call", "args": {"path": "big.py", "content": "<blob 3f2a... 1048576 characters>"},
     "blobs": [{"at": ["args", "content"], "sha": "3f2a..."}], ...}

The reference is out of band, in a field only the writer writes: a value the model sends that
looks like a placeholder is plain text (no `blobs` entry names it), so nothing the model emits can
make a reader substitute a blob. The one reader (ctxlog/reader.py) puts each value back, after
checking the blob's sha and that the placeholder is the one written for it; what it cannot put
back stays a placeholder and is named in `Log.blob_problems`, which `verify` reports.

A string holding a lone surrogate (it has no UTF-8 form) stays in its record, escaped as any
other (bench/core/types.canonical_json): a blob is always valid UTF-8, readable by any tool.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

DIR = "blobs"  # beside events.jsonl
KEY = "blobs"  # the envelope field that lists a record's references
Fields = dict[str, Any]
Source = Callable[[str], "str | None"]  # sha -> the blob's text, None when there is none


def placeholder(sha: str, chars: int) -> str:
    return f"<blob {sha} {chars} characters>"


def sha_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stash(fields: Fields, threshold: int | None) -> tuple[Fields, list[Fields], dict[str, str]]:
    """(the fields with every string longer than `threshold` replaced by its placeholder, the
    references for the envelope, sha -> text of the blobs). `fields` itself when nothing is that
    long, so an ordinary record is written exactly as before. Iterative: no recursion on depth."""
    if threshold is None:
        return fields, [], {}
    long: list[list[Any]] = []  # the paths of the long strings
    todo: list[tuple[Any, list[Any]]] = [(fields, [])]
    while todo:
        node, at = todo.pop()
        for k, value in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(value, str):
                if len(value) > threshold and _utf8(value):
                    long.append([*at, k])
            elif isinstance(value, dict | list):
                todo.append((value, [*at, k]))
    if not long:
        return fields, [], {}
    out = dict(fields)
    refs: list[Fields] = []
    texts: dict[str, str] = {}
    for at in sorted(long, key=lambda a: [str(p) for p in a]):  # one order, whatever the walk's
        node = out
        for k in at[:-1]:  # copy the containers on the way: the caller's event is left as it was
            node[k] = dict(node[k]) if isinstance(node[k], dict) else list(node[k])
            node = node[k]
        value = node[at[-1]]
        sha = sha_of(value)
        texts[sha] = value
        refs.append({"at": at, "sha": sha})
        node[at[-1]] = placeholder(sha, len(value))
    return out, refs, texts


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: stays in the record, escaped
        return False
    return True


def write(directory: Path, texts: dict[str, str]) -> None:
    """Each blob not already stored, written whole before the record that names it (a killed
    trial never leaves a reference to a missing or torn blob: the rename is atomic)."""
    if not texts:
        return
    directory.mkdir(exist_ok=True)
    for sha, text in texts.items():
        target = directory / sha
        if target.exists():
            continue
        part = directory / f".{sha}.{os.getpid()}.part"
        part.write_bytes(text.encode("utf-8"))
        os.replace(part, target)


def directory(path: Path) -> Source:
    """The blobs of a trial's folder (`path` is its `blobs/`)."""

    def read(sha: str) -> str | None:
        if len(sha) != 64 or not all(c in "0123456789abcdef" for c in sha):
            return None  # never a path outside the folder
        try:
            return (path / sha).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    return read


def resolve(record: Fields, source: Source | None, cache: dict[str, tuple[str | None, bool]]) -> list[str]:
    """Put each referenced value of `record` (a dict parsed from one line) back in place; the
    problems, one line each: a missing blob, one whose text is not its sha's, a reference to no
    placeholder. `record` keeps its `blobs` field (the reader moves it out of the fields)."""
    refs = record.get(KEY)
    if refs is None:
        return []
    seq = record.get("seq")
    if not isinstance(refs, list):
        return [f"seq {seq}: its `{KEY}` field is not a list of references"]
    problems = []
    for ref in refs:
        at, sha = (ref.get("at"), ref.get("sha")) if isinstance(ref, dict) else (None, None)
        if not isinstance(at, list) or not at or not isinstance(sha, str):
            problems.append(f"seq {seq}: a malformed blob reference {str(ref)[:200]}")
            continue
        if sha not in cache:
            text = source(sha) if source is not None else None
            cache[sha] = (text, text is not None and sha_of(text) == sha)
        text, sound = cache[sha]
        where = "/".join(str(p) for p in at)
        if text is None:
            problems.append(f"seq {seq}: blob {sha} ({where}) is missing")
            continue
        if not sound:
            problems.append(f"seq {seq}: blob {sha} ({where}) does not match its sha")
            continue
        parent = _parent(record, at)
        if parent is None or parent[at[-1]] != placeholder(sha, len(text)):
            problems.append(f"seq {seq}: blob reference {where} names no placeholder of blob {sha}")
            continue
        parent[at[-1]] = text
    return problems


def _parent(record: Fields, at: list[Any]) -> Any:
    """The container holding the value at path `at`, or None when the path leads nowhere."""
    node: Any = record
    for k in at[:-1]:
        node = _step(node, k)
        if node is None:
            return None
    return node if _step(node, at[-1]) is not None else None


def _step(node: Any, k: Any) -> Any:
    if isinstance(node, dict) and isinstance(k, str) and k in node:
        return node[k]
    if isinstance(node, list) and isinstance(k, int) and not isinstance(k, bool) and 0 <= k < len(node):
        return node[k]
    return None
