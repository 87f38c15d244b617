"""The progress file read incrementally (bench.study.progress.Tail) counts as the whole file does."""

from __future__ import annotations

import json
from pathlib import Path

from bench.study.progress import Tail, _append, read_progress, summarize


def test_tail_reads_only_what_was_appended_and_counts_as_the_whole_file(tmp_path: Path):
    path = tmp_path / "progress.jsonl"
    tail = Tail(path)
    assert tail.read() == []  # no file yet
    outcomes = ["success", "failure", "success", "crashed", "skipped"]
    for job, outcome in enumerate(outcomes):
        _append(path, {"job": job, "outcome": outcome})
        assert summarize(tail.read(), 10, 5.0) == summarize(read_progress(path), 10, 5.0)
    _append(path, {"job": 3, "outcome": "success"})  # a job recorded again: its latest record counts
    with path.open("a") as f:
        f.write(json.dumps({"job": 9, "outcome": "failure"})[:10])  # a line still being written
    s = summarize(tail.read(), 10, 5.0)
    assert s["done"] == 5 and s["counts"] == {"success": 3, "failure": 1, "skipped": 1}
    offset = tail.offset
    with path.open("a") as f:
        f.write(json.dumps({"job": 9, "outcome": "failure"})[10:] + "\n")
    assert summarize(tail.read(), 10, 5.0)["counts"]["failure"] == 2  # the rest of the line, read once
    assert tail.offset > offset and tail.offset == path.stat().st_size
