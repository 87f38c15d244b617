"""Who plays a trial: the seam between the harness and an agent (docs/design.md §2, §8).

The harness (bench/trial/driver.py) drives the trial: drift commits between steps, the step head
read fresh, certification from the check's own report, the attempt budget, the turn and wall
limits, and the final check. A Player plays it:

    start(seat)          the trial's parts, handed over once: task, sandbox, event log, referee
    play(instruction)    step k, or a retry after a failed check; returns when the player ends
                         its turn, with what it claims (TurnEnd: submitted / gave up)
    reap()               end every process the player left (after every turn and at the end)

ctxbench's own loop (bench/trial/loop.py: strategy, provider, tools) is one Player. Its
`submit_step` is its end of turn: it asks the referee to certify during the turn, so the check's
result reaches the model as the tool result, and it returns `TurnEnd(certified=True)` once a check
passed. An external agent (a CLI in the sandbox, an in-process message list) is another: it ends
its turn however it does, the harness certifies after, and a failed check comes back to it as its
next instruction, within the step's attempt budget.

Every acting model call is a turn the referee counts (`Referee.take_turn`), whoever makes it: the
limits are the harness's, raised as exceptions (a `TrialFailed`, or `StepTurnsUsed` when the
step's turns are spent: the player then gives up the step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from bench.core.registry import Registry
from bench.eventlog.writer import EventLog
from bench.sandbox.base import Sandbox
from bench.trial.certify import HarnessCopy
from strategies.base import Certified, StepHead
from tasks.spec import Step, TaskSpec

Claim = Literal["submitted", "gave_up"]
SUBMITTED: Claim = "submitted"
GAVE_UP: Claim = "gave_up"

# External agents (`agent=<name>`, conf/agent/, docs/agents.md) are loaded by name: they build on
# this module, so the harness names them only here, as a registry entry (docs/design.md §5).
PLAYERS = Registry(
    "agent",
    {"external": "bench.agents.players:EXTERNAL"},
    hint="choose an agent with agent=<name> (see conf/agent/)",
    group="ctxbench.players",
)


class StepTurnsUsed(Exception):
    """The step's turns (`limits.max_turns_per_step`) are spent: the player gives up the step."""


@dataclass(frozen=True)
class Certification:
    """The harness's verdict on a step, from the check's own report (certify.py)."""

    passed: bool
    text: str  # what the player is told: the check's result (and, passed, what the step established)
    failure: str | None = None  # the end of the check's output, when it failed
    certified: Certified | None = None  # the step as certified, when it passed


class Referee(Protocol):
    """What the harness does for a player during its turn."""

    turns: int  # acting turns played so far in the trial

    def take_turn(self) -> int:
        """Count one acting turn about to be played and return its index; raises `StepTurnsUsed`,
        or a `TrialFailed` (`turn_budget`, `timeout`) when a limit says no."""
        ...

    def certify(self, index: int, turn: int, notes: str) -> Certification:
        """Certify step `index` now (logging `check`, `step_status` and failed invariants at `turn`)."""
        ...


@dataclass(frozen=True)
class Seat:
    """The trial's parts, handed to the player at `start`."""

    task: TaskSpec
    sandbox: Sandbox
    log: EventLog
    copy: HarnessCopy  # the protected files as the harness knows them: what a `run` restores
    referee: Referee


@dataclass(frozen=True)
class Instruction:
    """Step `index` to play, or a retry of it after a failed check (`retry`)."""

    index: int
    step: Step
    head: StepHead  # the step head the harness read fresh (and logged) before this step
    text: str  # the instruction as the player's next user message
    retry: bool = False


@dataclass(frozen=True)
class TurnEnd:
    """What a player claims when it ends its turn."""

    claim: Claim
    certified: bool = False  # the referee certified the step during the turn (the own loop's submit_step)
    notes: str = ""  # the hand-off, when the harness certifies after the turn


class Player(Protocol):
    """A player may also name `mounts` (a tuple of bench.sandbox.base.Mount): host folders, read-only,
    that the trial's sandbox is created with (an agent that runs inside it: its install, the proxy
    socket's folder). The player is made before the sandbox for that reason (runner.play)."""

    # The player starts a new session at every step head (logged with `step_start`).
    fresh_session_per_step: bool

    def start(self, seat: Seat) -> None: ...

    def play(self, instruction: Instruction) -> TurnEnd: ...

    def reap(self) -> None: ...
