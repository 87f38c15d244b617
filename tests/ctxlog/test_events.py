"""The schema: one class per kind, tolerant parsing, nothing in a record lost by reading it."""

from __future__ import annotations

import dataclasses

from ctxlog import events as ev


def test_every_kind_has_a_frozen_class_and_round_trips():
    assert len(ev.CLASSES) == len(ev.KINDS) == 27
    for kind, cls in ev.CLASSES.items():
        e = cls(turn=2, seq=5)
        assert e.kind == kind and ev.parse(e.record()) == e
        try:
            e.turn = 3  # type: ignore[misc]
        except dataclasses.FrozenInstanceError:
            pass
        else:
            raise AssertionError(f"{cls.__name__} is not frozen")


def test_unknown_fields_and_kinds_are_kept_not_dropped():
    rec = {
        "seq": 4,
        "turn": 1,
        "kind": "tidy_up",
        "prev": "p",
        "step": "s01",
        "taken": True,
        "new_field": [1, 2],
        "t": {"ts": 1.0},
    }
    e = ev.parse(rec)
    assert isinstance(e, ev.TidyUp) and e.taken and e.extra == {"new_field": [1, 2]} and e.prev == "p"
    back = e.record()
    assert {k: back[k] for k in rec if k != "prev"} == {k: v for k, v in rec.items() if k != "prev"}
    assert back["attempt"] == 0 and back["anchors"] == []  # missing fields read as their defaults
    odd = ev.parse({"seq": 9, "turn": "x", "kind": "made_up", "what": 1})
    assert isinstance(odd, ev.Unknown) and odd.turn is None and odd.record()["kind"] == "made_up"
    assert odd.record()["what"] == 1


def test_optional_fields_are_left_out_while_none_and_a_missing_field_has_its_default():
    assert "decisions" not in ev.ModelCall().fields() and "drift_note" in ev.StepStart().fields()
    assert (
        "schema" not in ev.TrialStart().fields() and ev.TrialStart(schema=ev.SCHEMA).fields()["schema"] == 2
    )
    old = ev.parse({"seq": 0, "turn": 0, "kind": "check", "step": "s01", "exit_code": 0})
    assert isinstance(old, ev.Check) and old.passed is None and old.parts == [] and not old.timed_out
