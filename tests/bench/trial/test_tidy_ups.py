"""Tidy-up chances judged from actions: on offer by the task's oracle over what the context shows,
taken only when the reply's own successful edits removed the code."""

from __future__ import annotations

from dataclasses import replace

from bench.core import render
from bench.core.types import Message
from bench.trial.tidy_ups import chances, perceived
from tests.helpers.sim_world import API, API_V1, SHIM, make_task, prefix

EDITED = API_V1.replace("def fetch(url, *legacy):", "def fetch(url, *legacy, timeout=10):")
TIDIED = EDITED.replace(SHIM, "\n")


def _context(task, content: str = API_V1) -> list[Message]:
    return [
        *prefix(task),
        Message("user", render.current_step_block(task.steps[0])),
        Message("tool", render.file_block(API, content), tool_call_id="c0", name="read_file"),
    ]


def _edit(new: str, ok: bool = True) -> tuple[str, dict, str, bool]:
    text = f"edited {API}\n{render.file_block(API, new)}" if ok else f"ERROR: search text not found in {API}"
    return ("edit_file", {"path": API, "search": "x", "replace": "y"}, text, ok)


def test_a_tidy_up_done_by_the_reply_is_taken():
    task = make_task()
    (chance,) = chances(task, "s01", _context(task), [_edit(TIDIED)])
    assert (
        chance["taken"] is True and chance["anchors"] == ["_compat_fetch"] and chance["key"] == f"shim:{API}"
    )


def test_a_tidy_up_left_alone_or_attempted_by_a_failed_edit_is_not_taken():
    task = make_task()
    assert [c["taken"] for c in chances(task, "s01", _context(task), [_edit(EDITED)])] == [False]
    assert [c["taken"] for c in chances(task, "s01", _context(task), [_edit(TIDIED, ok=False)])] == [False]


def test_no_chance_without_an_edit_or_when_the_code_is_not_in_view():
    task = make_task()
    read = ("read_file", {"path": API}, render.file_block(API, API_V1), True)
    assert chances(task, "s01", _context(task), [read]) == []
    # Not in view: the oracle asks to read first, so nothing is on offer (whatever the reply did).
    assert chances(task, "s01", [*prefix(task)], [_edit(TIDIED)]) == []
    # Already gone in the file the model sees: nothing invites the tidy-up.
    assert chances(task, "s01", _context(task, TIDIED), [_edit(TIDIED)]) == []


def test_perceived_is_the_newest_block_and_a_deleted_file_is_gone():
    msgs = [
        Message("tool", render.file_block(API, "old\n"), tool_call_id="a", name="read_file"),
        Message("tool", render.file_block(API, "new\n"), tool_call_id="b", name="read_file"),
    ]
    assert perceived(msgs) == {API: "new\n"}
    assert perceived([*msgs, Message("tool", f"deleted {API}", tool_call_id="c", name="delete_file")]) == {}


def test_an_oracle_that_chokes_on_what_the_model_wrote_offers_nothing_and_ends_nothing():
    """The adversary writes what no oracle expects; the measurement must not end the trial."""
    task = make_task()

    class Choking:
        def edits_for(self, step_id, perceived):
            raise ValueError("cannot parse what the model wrote")

        def cleanups(self, perceived, paths):
            raise AssertionError("never reached")

    broken = replace(task, oracle=Choking())
    assert chances(broken, "s01", _context(task), [_edit(TIDIED)]) == []
    assert chances(task, "s99", _context(task), [_edit(TIDIED)]) == []  # a step the oracle does not know
