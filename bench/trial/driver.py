"""The harness's side of a trial (docs/design.md §2): it drives the steps, a Player plays them.

    StepDriver(...).run(player)
      player.start(seat)
      for each step:
        drift arm: commit the drift scheduled before it            (`drift`)
        read the step head fresh                                   (`step_start`)
        player.play(step k) ... until the step is certified:
          the own loop certifies during its turn (submit_step -> certify)
          any other player ends its turn; the harness certifies, and a failed
          check is its next instruction, within the step's attempt budget
        player.reap(); commit the step as the agent
      the final check

Only the harness writes step status, from the check's own report (certify.py). The limits are
the harness's too: every acting turn is counted here (`take_turn`), and a limit reached raises.
Every way this ends badly is a named failure reason of bench.core.outcomes, never a success.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from bench.core import outcomes, queued
from bench.core.render import check_result, current_step_block, step_passed
from bench.eventlog.writer import FAILURE_DETAIL_TAIL_CHARS, EventLog
from bench.sandbox.base import Sandbox
from bench.trial import certify, steps
from bench.trial.harness_copy import HarnessCopy
from bench.trial.player import GAVE_UP, Certification, Instruction, Player, Seat, StepTurnsUsed, TurnEnd
from ctxlog import events as ev
from strategies.base import Certified
from tasks.spec import TaskSpec


@dataclass(frozen=True)
class Limits:
    max_turns: int
    max_turns_per_step: int  # also the attempts a player that certifies after its turn gets per step
    deadline: float  # time.monotonic() past which the trial fails with `timeout`
    drift: bool  # the arm applies the task's drift schedule


class StepDriver:
    """Drives one trial's steps for a Player; the Player's `Referee` during its turns."""

    def __init__(
        self, task: TaskSpec, sandbox: Sandbox, log: EventLog, limits: Limits, cache: Any = None
    ):  # bench/accel/checkcache.py's CheckCache, with sandbox.check_cache
        self.task, self.sandbox, self.log, self.limits, self.cache = task, sandbox, log, limits, cache
        self.copy = HarnessCopy(task)  # protected files as the harness knows them, kept on the host
        self.turns = 0
        self._step_turns = 0
        self._queued = queued.since_now()  # time queued for the study's allowance, from here

    def run(self, player: Player) -> None:
        """Play the trial to its end; returns on success, raises TrialFailed (or worse) otherwise."""
        player.start(Seat(self.task, self.sandbox, self.log, self.copy, self))
        last_commit = self.sandbox.base_commit
        for index, step in enumerate(self.task.steps):
            if self.limits.drift:
                steps.apply_drift(self.task, step, self.sandbox, self.log, self.turns, self.copy.apply)
            head, dirty = steps.read_head(step, self.sandbox, last_commit)
            self.log.append(
                ev.StepStart(
                    turn=self.turns,
                    step=step.id,
                    index=index,
                    repo_commit=head.repo_commit,
                    tree=head.tree,
                    files=[[p, c] for p, c in head.files],
                    drift_note=head.drift_note,
                    dirty_files=dirty,
                    new_session=player.fresh_session_per_step,
                    invariants=[[i.id, list(i.anchors)] for i in self.task.standing(index)],
                )
            )
            self._step_turns = 0
            self._play_step(player, Instruction(index, step, head, current_step_block(step)))
            last_commit = self.sandbox.commit(f"{step.id}: {step.title}", steps.AGENT_AUTHOR)
        final = certify.certify(
            self.sandbox, self.copy, self.log, self.turns, "final", self.task.final_check, cache=self.cache
        )
        if not final.passed:
            raise outcomes.failure("final_check_failed", final.output[-FAILURE_DETAIL_TAIL_CHARS:])

    def _play_step(self, player: Player, instruction: Instruction) -> None:
        step = instruction.step
        for _attempt in range(self.limits.max_turns_per_step):
            end = self._turn(player, instruction)
            if end.certified:
                return
            if end.claim == GAVE_UP:
                break
            verdict = self.certify(instruction.index, self.turns, end.notes)
            if verdict.passed:
                return
            instruction = Instruction(instruction.index, step, instruction.head, verdict.text, retry=True)
        raise outcomes.failure("step_failed", f"{step.id} not certified within its turn budget")

    def _turn(self, player: Player, instruction: Instruction) -> TurnEnd:
        try:
            return player.play(instruction)
        finally:
            player.reap()  # nothing the player started outlives its turn, nor runs during the check

    # -- the Referee -----------------------------------------------------------------------
    def take_turn(self) -> int:
        if self._step_turns >= self.limits.max_turns_per_step:
            raise StepTurnsUsed(f"{self.limits.max_turns_per_step} turns used in this step")
        if self.turns >= self.limits.max_turns:
            raise outcomes.failure("turn_budget", f"{self.limits.max_turns} turns used")
        if (
            time.monotonic() > self.limits.deadline + self._queued()
        ):  # queueing is the study's (core/queued.py)
            raise outcomes.failure("timeout", "trial wall-clock limit reached")
        self._step_turns += 1
        self.turns += 1
        return self.turns - 1

    def certify(self, index: int, turn: int, notes: str) -> Certification:
        """Certify from the check's own report, with the standing invariants' probes."""
        step = self.task.steps[index]
        standing = steps.in_force(self.task, index)
        chk = certify.certify(
            self.sandbox, self.copy, self.log, turn, step.id, step.check, standing, self.cache
        )
        self.log.append(ev.StepStatus(turn=turn, step=step.id, status="passed" if chk.passed else "failed"))
        if not chk.passed:
            tail = chk.output[-steps.FAILURE_TAIL_CHARS :]
            return Certification(False, check_result(step.id, False, chk.exit_code, tail), failure=tail)
        # Invariants count once the step is certified: a failed attempt's tree is not the agent's answer.
        steps.record_invariants(self.log, turn, standing, chk.invariant_codes)
        return Certification(
            True,
            step_passed(step),
            certified=Certified(
                step_id=step.id,
                check=step.check,
                tree_sha=self.sandbox.tree_sha(),
                notes=notes[: steps.NOTES_CAP_CHARS],
                diffstat=self.sandbox.git("diff", "--stat", "HEAD").strip(),
            ),
        )
