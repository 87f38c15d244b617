"""The player seam (bench/trial/player.py): the harness drives, any Player plays.

ctxbench's own loop is tested through the runner everywhere else; here a player of the other
kind, one that ends its turn without certifying (as an external agent does), plays the tiny task
through the harness's step driver: the harness certifies after the turn, hands a failed check
back as the next instruction, counts the attempts, reaps after every turn and keeps the limits.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.core.outcomes import TrialFailed
from bench.eventlog.writer import EventLog
from bench.trial.driver import Limits, StepDriver
from bench.trial.player import GAVE_UP, SUBMITTED, Instruction, Seat, TurnEnd
from ctxlog import events as ev
from ctxlog.reader import Log
from tests.bench.trial.conftest import CALC, tiny_task

WRONG = "def add(a, b):\n    return a - b\n"


class AfterTurnPlayer:
    """Writes one answer per turn, straight into the sandbox, and ends its turn claiming it is done."""

    fresh_session_per_step = True

    def __init__(self, answers: list[str | None], model_calls: int = 1) -> None:
        self.answers, self.model_calls = list(answers), model_calls
        self.instructions: list[Instruction] = []
        self.reaped = 0

    def start(self, seat: Seat) -> None:
        self.seat = seat

    def play(self, instruction: Instruction) -> TurnEnd:
        self.instructions.append(instruction)
        for _ in range(self.model_calls):
            self.seat.referee.take_turn()
        answer = self.answers.pop(0)
        if answer is None:
            return TurnEnd(GAVE_UP)
        self.seat.sandbox.write_file("calc.py", answer)
        return TurnEnd(SUBMITTED, notes="add() stays")

    def reap(self) -> None:
        self.reaped += 1


def drive(box, tmp_path: Path, player: AfterTurnPlayer, **limits: object) -> Log:
    log = EventLog(tmp_path / "events.jsonl")
    settings = {
        "max_turns": 50,
        "max_turns_per_step": 4,
        "deadline": time.monotonic() + 300,
        "drift": False,
        **limits,
    }
    try:
        StepDriver(tiny_task(), box, log, Limits(**settings)).run(player)  # type: ignore[arg-type]
    finally:
        log.close()
    return Log.from_records(log.records)


def test_a_failed_check_is_the_next_instruction_and_the_retry_is_certified(box, tmp_path):
    player = AfterTurnPlayer([WRONG, CALC])
    log = drive(box, tmp_path, player)
    first, retry = player.instructions
    assert (first.retry, retry.retry, retry.index) == (False, True, 0)
    assert first.text.startswith("CURRENT STEP") and retry.text.startswith("[check:s01 failed exit=")
    assert [s.status for s in log.of(ev.StepStatus)] == ["failed", "passed"]
    assert [c.step for c in log.of(ev.Check)] == ["s01", "s01", "final"]
    assert player.reaped == 2  # after each turn, before the check
    (start,) = log.of(ev.StepStart)
    assert start.new_session is True  # the player's own word, logged by the harness


def test_a_player_that_gives_up_fails_the_step(box, tmp_path):
    with pytest.raises(TrialFailed) as err:
        drive(box, tmp_path, AfterTurnPlayer([None]))
    assert err.value.reason == "step_failed"


def test_the_attempt_budget_is_the_harness(box, tmp_path):
    with pytest.raises(TrialFailed) as err:
        drive(box, tmp_path, AfterTurnPlayer([WRONG] * 10), max_turns_per_step=3)
    assert err.value.reason == "step_failed"


def test_the_turn_limit_holds_whoever_makes_the_model_calls(box, tmp_path):
    with pytest.raises(TrialFailed) as err:
        drive(box, tmp_path, AfterTurnPlayer([CALC], model_calls=6), max_turns=5, max_turns_per_step=10)
    assert err.value.reason == "turn_budget"


def test_the_wall_clock_limit_holds(box, tmp_path):
    with pytest.raises(TrialFailed) as err:
        drive(box, tmp_path, AfterTurnPlayer([CALC]), deadline=time.monotonic() - 1)
    assert err.value.reason == "timeout"
