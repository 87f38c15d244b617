"""An oracle's answers kept by what they were asked about (`KeptAnswers`).

A task's oracle is asked the same question again and again: the simulated model asks it for its
step's edits and the tidy-ups on view at every turn, the harness asks it which tidy-ups a reply
was offered (bench/trial/tidy_ups.py), and the 16 strategy x arm cells of a grid meet the same
code (tasks.generate keeps one task, so one oracle, per process). Each answer walks the syntax
trees of the files it reads, ~1-3 ms. An oracle is pure (tasks/spec.py: its answers follow from
the step and the files it is shown) and answers with frozen data, so an answer is kept under a
digest of the whole question, the files' contents included, and handed out again.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from tasks.spec import Cleanup, Oracle, StepPlan

KEPT = 512  # answers kept per oracle, the least recently asked dropped first (a few KB each)
T = TypeVar("T")


def question(kind: str, *parts: Iterable[str]) -> bytes:
    """A digest of every string of the question, each length-prefixed so no two questions meet."""
    h = hashlib.sha256(kind.encode())
    for part in parts:
        for s in part:
            b = s.encode("utf-8", "surrogatepass")
            h.update(len(b).to_bytes(8, "big"))
            h.update(b)
        h.update(b"\xff" * 9)  # a part's end: never a length prefix
    return h.digest()


def _files(perceived: Mapping[str, str]) -> list[str]:
    return [s for path in sorted(perceived) for s in (path, perceived[path])]


class KeptAnswers:
    """The Oracle protocol over another oracle, each answer computed once per question."""

    def __init__(self, oracle: Oracle, kept: int = KEPT) -> None:
        self.oracle, self.kept = oracle, kept
        self._answers: OrderedDict[bytes, Any] = OrderedDict()
        self._lock = threading.Lock()  # trials in threads of one process share the task

    def edits_for(self, step_id: str, perceived: Mapping[str, str]) -> StepPlan:
        key = question("edits_for", (step_id,), _files(perceived))
        return self._answer(key, lambda: self.oracle.edits_for(step_id, perceived))

    def cleanups(self, perceived: Mapping[str, str], paths: tuple[str, ...]) -> tuple[Cleanup, ...]:
        key = question("cleanups", paths, _files(perceived))
        return self._answer(key, lambda: self.oracle.cleanups(perceived, paths))

    def __getattr__(self, name: str) -> Any:  # the family's own attributes (its names, say)
        if name == "oracle":  # not set yet (an unpickling): never ask ourselves
            raise AttributeError(name)
        return getattr(self.oracle, name)

    def _answer(self, key: bytes, ask: Callable[[], T]) -> T:
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
        answer = ask()  # outside the lock: two threads asking at once both compute the same answer
        with self._lock:
            self._answers[key] = answer
            while len(self._answers) > self.kept:
                self._answers.popitem(last=False)
        return answer
