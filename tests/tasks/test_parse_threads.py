"""In-process parses are one at a time (tasks/common/build.parse_source): CPython 3.11's AST
builder keeps its recursion counter in interpreter-wide state, and the threads launcher
generates tasks and certifies steps in many threads of one process (gh-106905)."""

from __future__ import annotations

import ast
import threading
import time

import tasks
from tasks.common import build


def test_tasks_generated_in_many_threads_never_parse_two_at_once(monkeypatch):
    inside, most, lock = [0], [0], threading.Lock()
    real = ast.parse

    def watched(*args, **kwargs):
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        try:
            time.sleep(0.0005)  # widen the window another thread's parse would land in
            return real(*args, **kwargs)
        finally:
            with lock:
                inside[0] -= 1

    monkeypatch.setattr(ast, "parse", watched)
    build.parse.cache_clear()
    errors: list[BaseException] = []

    def generate(seed: int) -> None:
        try:
            for family in tasks.FAMILIES:
                tasks.fresh(family, seed)  # generated now: a kept task parses nothing
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=generate, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == [] and most[0] == 1
