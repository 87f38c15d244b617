"""Step boundaries: invariants recorded, in force, drift (certification is test_certify.py)."""

from __future__ import annotations

import pytest

from bench.eventlog.writer import EventLog
from bench.sandbox import create
from bench.trial import steps as trial_steps
from tasks.spec import Drift, Invariant, Step
from tests.helpers.configs import sandbox_config


@pytest.fixture
def box():
    cfg = sandbox_config("local")
    sandbox = create(cfg, {"a.txt": "alpha\n", "tests/t.txt": "keep\n"}, "steps-test")
    yield sandbox
    sandbox.close()


def test_a_probe_that_never_reports_counts_as_violated(tmp_path):
    log = EventLog(tmp_path / "e.jsonl")
    assert trial_steps.record_invariants(log, 0, [Invariant("x", "t", check="true")], {}) == 1


def test_in_force_respects_when_an_invariant_starts_and_is_lifted():
    from tests.helpers.strategy_loop import make_task

    task = make_task(n_steps=4)
    steps = list(task.steps)
    steps[1] = Step(
        steps[1].id,
        steps[1].title,
        steps[1].instructions,
        steps[1].touches,
        steps[1].check,
        (Invariant("late", "from s02 until s04", check="true", until=steps[3].id, stated=steps[1].id),),
    )
    task = task.__class__(**{**task.__dict__, "steps": tuple(steps), "invariants": ()})
    assert [[i.id for i in trial_steps.in_force(task, k)] for k in range(4)] == [[], ["late"], ["late"], []]


def test_drift_is_committed_by_its_outside_author_and_noted_at_the_next_head(box, tmp_path):
    log = EventLog(tmp_path / "e.jsonl")
    step = Step("s02", "t", "i", ("a.txt",), "true")
    drift = Drift(
        "d1",
        "stale_edit",
        "s02",
        "colleague edits a.txt",
        "Dana <dana@example.org>",
        (("a.txt", "alpha\nbeta\n"),),
    )
    from tests.helpers.strategy_loop import make_task

    task = make_task(n_steps=2)
    task = task.__class__(**{**task.__dict__, "drift": (drift,)})
    before = box.git("rev-parse", "HEAD").strip()
    heard: list = []
    assert trial_steps.apply_drift(task, step, box, log, 3, heard.extend) == 1
    assert heard == [("a.txt", "alpha\nbeta\n")]  # the harness's copy of protected files hears of it
    assert box.git("log", "-1", "--format=%an <%ae>").strip() == "Dana <dana@example.org>"
    head, _ = trial_steps.read_head(step, box, before)
    assert head.drift_note and "a.txt" in head.drift_note
    assert dict(head.files)["a.txt"] == "alpha\nbeta\n"
    assert log.records[-1]["kind"] == "drift" and log.records[-1]["drift_kind"] == "stale_edit"


def test_scrub_removes_wall_clock_figures_only():
    from bench.trial.certify import scrub

    assert scrub("3 passed in 0.41s\nwait 5s") == "3 passed in <elapsed>\nwait 5s"


def test_learn_carries_the_harness_invariants_or_only_the_models():
    inv = Invariant("compat-form", "fetch keeps its legacy form until s12.", stated="s02")
    step = Step("s02", "t", "i", ("a.py",), "true", (inv,))
    earlier = (Invariant("n-s01-1", "an earlier note", stated="s01"),)
    said = ["Keep accepting the legacy form until s12.", "  ", "x" * 300]
    harness = trial_steps.learn(step, said, earlier, "harness")
    assert [i.id for i in harness] == ["n-s01-1", "compat-form", "n-s02-1", "n-s02-3"]
    model = trial_steps.learn(step, said, earlier, "model")
    assert [i.id for i in model] == [
        "n-s01-1",
        "n-s02-1",
        "n-s02-3",
    ]  # the step's own invariant is not carried
    assert len(model[-1].text) == 240 and trial_steps.learn(step, [], (), "model") == ()
