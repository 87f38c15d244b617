"""Kept tasks and their kept answers (`task.kept`; docs/scaling.md): a process generates each
task once and each of its oracle's answers once per question.

The 16 strategy x arm cells of a grid face the same task, and the harness and the simulated
model each ask for it (`tasks.from_id`, ~16 ms a generation, twice a trial). A task is frozen
data and its oracle keeps nothing a caller can change, so one generation serves them all: the
trial's entry point installs `generate` as the process's keeper (`tasks.keep_with`,
bench/trial/runner.py). 320 tasks cover the 300 of the 100-seed grid, which a worker meets again
~150 jobs later (~0.2 MB a task).

A kept task's oracle is asked the same question again and again: the simulated model asks it for
its step's edits and the tidy-ups on view at every turn, the harness asks it which tidy-ups a
reply was offered (bench/trial/tidy_ups.py), and the cells meet the same code. Each answer walks
the syntax trees of the files it reads, ~1-3 ms. An oracle is pure (tasks/spec.py: its answers
follow from the step and the files it is shown) and answers with frozen data, so `KeptAnswers`
keeps an answer under a digest of the whole question, the files' contents included, and hands it
out again.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import tasks
from tasks.spec import Cleanup, Oracle, StepPlan, TaskSpec

KEPT_TASKS = 320  # tasks kept per process, the least recently asked dropped first
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


def generate(family: str, seed: int, **size: Any) -> TaskSpec:
    """The family's task, generated once per process; its oracle's answers kept (the keeper)."""
    key = (family, seed, tuple(sorted(size.items())))
    try:
        hash(key)
    except TypeError:  # a knob that cannot be a key (a list, say): the family says what is wrong
        return tasks.fresh(family, seed, **size)
    return _kept(key)


@functools.lru_cache(maxsize=KEPT_TASKS)
def _kept(key: tuple[str, int, tuple[tuple[str, Any], ...]]) -> TaskSpec:
    family, seed, size = key
    task = tasks.fresh(family, seed, **dict(size))
    return dataclasses.replace(task, oracle=KeptAnswers(task.oracle))
