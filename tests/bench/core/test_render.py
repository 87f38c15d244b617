"""The model-visible text, rendered by bench/core/templates/, is byte for byte what the
f-strings it replaced wrote (tests/helpers/render_before.py keeps them): records and config
hashes hang on every character. Compared over generated tasks of every family (their plans,
invariants, steps and files) and over edge cases the families never produce (empty plans,
empty files, text with template syntax in it)."""

from __future__ import annotations

import random
from dataclasses import replace

import jinja2
import pytest

import tasks
from bench.core import render
from tasks.spec import Invariant, Step
from tests.helpers import render_before as before

SEEDS = range(8)


def every_task():
    for family in sorted(tasks.FAMILIES):
        for seed in SEEDS:
            yield tasks.fresh(family, seed)


# Odd text a task or a model's output may carry: template syntax, markers, blank lines, unicode.
ODD = [
    "",
    "x",
    "{{ task }}",
    "{% if %}",
    "{# c #}",
    "line\n",
    "\n",
    "a\n\nb\n\n",
    "[inv:x] y",
    "ünï ☃ `q`",
    "trailing space ",
    "\r\nwindows\r\n",
    "{{",
    "}}\n",
]


def test_system_prompt_and_handoff_question():
    assert render.SYSTEM_PROMPT == before.SYSTEM_PROMPT
    assert render.HANDOFF_QUESTION == before.HANDOFF_QUESTION


@pytest.mark.parametrize("task", list(every_task()), ids=lambda t: t.task_id)
def test_task_blocks_as_before(task):
    assert render.task_block(task) == before.task_block(task)
    assert render.policy_block(task) == before.policy_block(task)
    assert render.plan_lines(task.steps) == before.plan_lines(task.steps)
    for inv in task.invariants:
        assert render.invariant_line(inv) == before.invariant_line(inv)
    for step in task.steps:
        assert render.step_line(step) == before.step_line(step)
        for failure in (None, "", "AssertionError: 3 != 4\n  at line 2"):
            assert render.current_step_block(step, failure) == before.current_step_block(step, failure)
        for inv in step.establishes:
            assert render.invariant_line(inv) == before.invariant_line(inv)
    for path, content in task.files[:40]:
        assert render.file_block(path, content) == before.file_block(path, content)


def test_edge_cases_as_before():
    rng = random.Random(0)
    task = tasks.fresh("signature_migration", 0)
    step = task.steps[0]
    for text in ODD:
        inv = Invariant(id="i.1", text=text)
        odd_step = replace(step, title=text, instructions=text, check=text, touches=(text, text))
        assert render.invariant_line(inv) == before.invariant_line(inv)
        assert render.step_line(odd_step) == before.step_line(odd_step)
        assert render.current_step_block(odd_step, text) == before.current_step_block(odd_step, text)
        assert render.file_block(text or "p", text) == before.file_block(text or "p", text)
        for passed in (True, False):
            code = rng.randint(-9, 200)
            assert render.check_result(text, passed, code, text) == before.check_result(
                text, passed, code, text
            )
        odd_task = replace(
            task,
            title=text,
            text=text,
            test_command=text,
            protected=(text,) if text else (),
            invariants=(inv,) * rng.randint(0, 3),
            steps=(odd_step,) * rng.randint(0, 3),
        )
        assert render.task_block(odd_task) == before.task_block(odd_task)
        assert render.policy_block(odd_task) == before.policy_block(odd_task)
    empty = replace(task, invariants=(), steps=(), protected=())
    assert render.task_block(empty) == before.task_block(empty)
    assert render.task_block(empty).endswith("(none)\n\nPLAN\n\n")


def test_a_missing_field_is_an_error_not_an_empty_string():
    class NoTitle:
        id = "s01"

    with pytest.raises(jinja2.UndefinedError):
        render.step_line(NoTitle())  # type: ignore[arg-type]


def test_rendered_blocks_parse_back():
    task = tasks.fresh("config_rename", 3)
    text = "\n\n".join(
        [
            render.task_block(task),
            render.current_step_block(task.steps[1]),
            render.check_result(task.steps[1].id, False, 3, "boom"),
            *(render.file_block(p, c) for p, c in task.files[:3]),
        ]
    )
    assert render.parse_task_id(text) == task.task_id
    assert render.parse_current_step(text) == task.steps[1].id
    assert render.parse_check_results(text) == [(task.steps[1].id, False, 3)]
    assert [p for p, _, _ in render.parse_file_blocks(text)] == [p for p, _ in task.files[:3]]
    assert [i for i, _ in render.parse_invariants(text)] == [i.id for i in task.invariants]


def test_step_type_is_what_the_templates_read():
    # The templates read these fields by name: a rename in tasks/spec.py must fail here, not in a trial.
    assert {"id", "title", "instructions", "touches", "check"} <= set(Step.__dataclass_fields__)
