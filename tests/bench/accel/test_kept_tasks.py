"""Kept tasks and answers (bench/accel/kept_tasks.py, `task.kept`): with the switch on, a
process's trials and the simulated model share one generation of a task and its oracle answers
each question once, as the oracle's own answer (a question is the step or paths and every file's
path and content); with it off, every generation is afresh."""

from __future__ import annotations

import threading

import pytest

import tasks
from bench.accel import kept_tasks
from bench.accel.kept_tasks import KeptAnswers, question
from bench.config import compose, load
from bench.trial import runner
from tasks.spec import StepPlan, TaskSpec
from tests.tasks.digests import task_digest


class Counting:
    """An oracle that notes every question it is asked."""

    def __init__(self, oracle) -> None:
        self.oracle, self.asked = oracle, []
        self.names = "the family's own"

    def edits_for(self, step_id, perceived):
        self.asked.append(("edits_for", step_id))
        return self.oracle.edits_for(step_id, perceived)

    def cleanups(self, perceived, paths):
        self.asked.append(("cleanups", paths))
        return self.oracle.cleanups(perceived, paths)


@pytest.fixture
def spec():
    return tasks.fresh("signature_migration", 2, steps=8)


def test_each_question_is_asked_once_and_answered_as_the_oracle_answers(spec):
    inner = Counting(spec.oracle)
    kept = KeptAnswers(inner)
    files = dict(spec.files)
    paths = tuple(sorted(p for p in files if p.endswith(".py")))
    for step in spec.steps:
        assert kept.edits_for(step.id, files) == spec.oracle.edits_for(step.id, files)
        # a copy asks nothing new
        assert kept.edits_for(step.id, dict(files)) is kept.edits_for(step.id, files)
    assert kept.cleanups(files, paths) == spec.oracle.cleanups(files, paths)
    kept.cleanups(dict(reversed(list(files.items()))), paths)  # the files' order is not the question
    assert len(inner.asked) == len(spec.steps) + 1
    assert kept.names == "the family's own"


def test_a_changed_file_a_missing_file_or_other_paths_is_a_new_question(spec):
    inner = Counting(spec.oracle)
    kept = KeptAnswers(inner)
    files = dict(spec.files)
    step = spec.steps[1].id
    path = next(p for p in files if p.endswith(".py") and not p.startswith("tests/"))
    kept.edits_for(step, files)
    kept.edits_for(step, {**files, path: files[path] + "\n# changed\n"})
    kept.edits_for(step, {p: c for p, c in files.items() if p != path})
    kept.cleanups(files, (path,))
    kept.cleanups(files, (path, "other.py"))
    kept.edits_for(spec.steps[2].id, files)
    assert len(inner.asked) == 6


def test_no_two_questions_share_a_digest_by_where_their_strings_split():
    assert question("k", ("a",), ["ab", "c"]) != question("k", ("a",), ["a", "bc"])
    assert question("k", ("ab",), []) != question("k", ("a", "b"), [])
    assert question("k", ("a",), ["b"]) != question("k", ("a", "b"), [])
    assert question("edits_for", ("s",), []) != question("cleanups", ("s",), [])


def test_answers_kept_are_bounded_and_the_least_recently_asked_goes_first():
    plans = {str(i): StepPlan(reads=(str(i),)) for i in range(5)}

    class Plans:
        asked: list[str] = []

        def edits_for(self, step_id, perceived):
            self.asked.append(step_id)
            return plans[step_id]

    inner = Plans()
    kept = KeptAnswers(inner, kept=3)  # type: ignore[arg-type]
    for step in ("0", "1", "2", "0", "3"):  # "1" is now the least recently asked: dropped for "3"
        kept.edits_for(step, {})
    kept.edits_for("0", {})
    kept.edits_for("1", {})
    assert inner.asked == ["0", "1", "2", "3", "1"]


def test_threads_sharing_a_task_get_the_oracles_answers(spec):
    kept = KeptAnswers(spec.oracle)
    files = dict(spec.files)
    want = {s.id: spec.oracle.edits_for(s.id, files) for s in spec.steps}
    got: list[bool] = []

    def ask() -> None:
        got.extend(kept.edits_for(s.id, files) == want[s.id] for s in spec.steps for _ in range(3))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [True] * (4 * 3 * len(spec.steps))


@pytest.fixture
def no_keeper():
    """Whatever a test's trials installed, the next test's process generates afresh."""
    yield
    tasks.keep_with(None)
    kept_tasks._kept.cache_clear()


def _trial_task(*overrides: str) -> TaskSpec:
    """The task a trial of this config is handed, built as the entry point builds it."""
    parts = runner.prepare(load(compose(["task=config_rename", "task.seed=4", *overrides])))
    parts.provider.close()
    return parts.task


def test_with_the_switch_on_trials_and_the_model_share_a_kept_task_and_its_answers(no_keeper):
    task = _trial_task("task.kept=true")
    assert _trial_task("task.kept=true") is task  # the process's next trial
    loaded = tasks.from_id(task.task_id)  # what the simulated model loads, kept under its id's knobs
    assert tasks.from_id(task.task_id) is loaded and loaded == task
    assert isinstance(task.oracle, KeptAnswers)
    files, step = dict(task.files), task.steps[0].id
    assert task.oracle.edits_for(step, files) is task.oracle.edits_for(step, dict(files))  # answered once
    assert task_digest(task) == task_digest(tasks.fresh("config_rename", 4, steps=12, filler=5))


def test_with_the_switch_off_every_generation_is_afresh_and_the_same(no_keeper):
    a, b = _trial_task(), _trial_task()
    assert a is not b and a.oracle is not b.oracle
    assert tasks.from_id(a.task_id) is not tasks.from_id(a.task_id)
    assert not isinstance(a.oracle, KeptAnswers)
    assert a == b and task_digest(a) == task_digest(b)


def test_a_trial_with_the_switch_off_keeps_nothing_an_earlier_trial_kept(no_keeper):
    kept = _trial_task("task.kept=true")
    after = _trial_task()  # the same worker's next trial, its switch off
    assert after is not kept and not isinstance(after.oracle, KeptAnswers)
    assert not isinstance(tasks.from_id(after.task_id).oracle, KeptAnswers)


def test_a_task_is_generated_once_per_process_and_equals_a_fresh_one(monkeypatch, no_keeper):
    """The 16 cells of a grid and the simulated model share one generation (KEPT_TASKS)."""
    made: list[tuple] = []
    real = tasks.FAMILIES.load("config_rename")
    monkeypatch.setattr(
        tasks, "fresh", lambda family, seed, **size: made.append((family, seed, size)) or real(seed, **size)
    )
    tasks.keep_with(kept_tasks.generate)
    kept_tasks._kept.cache_clear()
    a = tasks.generate("config_rename", 5, steps=8)
    assert tasks.generate("config_rename", 5, steps=8) is a and tasks.from_id(a.task_id) is a
    assert made == [("config_rename", 5, {"steps": 8})]
    assert a == real(5, steps=8) and tasks.generate("config_rename", 6, steps=8) != a
    with pytest.raises(ValueError, match="task.size.steps: Input should be less than or equal to 16"):
        tasks.generate("config_rename", 5, steps=99)
    with pytest.raises(ValueError, match="task.size.steps"):  # no key: the family still says what is wrong
        tasks.generate("config_rename", 5, steps=[8])
