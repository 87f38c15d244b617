"""ctxbench's strategies over mini-swe-agent's message list (`agent.context=strategy`; docs/agents.md).

mini's message list belongs to its caller (bench/agents/mini_driver.py), so before each of mini's
model calls the harness may build what the model sees from it, as ctxbench's own loop builds its
context from the transcript (strategies/base.py): mini keeps its whole list (its session), and the
model sees the trial's `strategy` applied to it. Off by default (`agent.context=own`: mini's own
policy, the whole list every call), so a trial without it is what it was.

How each strategy maps, honestly:
- the stable prefix is mini's own (its system prompt and first user message: the task, the policy
  and step 1), never ctxbench's, so mini's templates and tool still hold; the strategy's budget is
  the window less the reply reserve, mini's tool, and what mini's prefix takes beyond ctxbench's;
- the transcript is everything after that prefix, in the harness's neutral form (the proxy's own
  OpenAI Chat codec), and the step notice is the instruction the harness gave (bench/agents/mini.py);
- `raw` and `masking` apply as they are; `compaction` (and ledger's backstop) is summarised by the
  harness, as ctxbench's loop does: a `compaction`-purpose model call and a `compaction` event;
- `ledger` and `subagent` need the harness's durable state: the step head (given with each
  instruction), the certified steps (read back from the trial's `check` and `commit` events) and
  the hand-off, which for mini is its end-of-task output (the JSON `notes` when it sends JSON, else
  the whole output): mini has no other channel for it, so it is never refused for lacking notes;
- `subagent`'s fresh conversation per step is a fresh *context*: mini's own session goes on (its
  list keeps every turn), the model sees the brief and this step's turns only.

Every rewrite is on the record as the own loop records it (`compaction`, `context_truncation`), the
request the model saw is the proxy's `agent_request` (so `verify` rebuilds it), and the choice is the
trial's level (`mini_swe_agent+<strategy>`: trial_start, the run's `strategy` tag and run name).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bench.core.tokens import count_messages, tools_tokens
from bench.core.toolspecs import TOOLS
from bench.core.types import Message
from bench.providers.wire import openai as ow
from strategies.base import Built, Certified, State, StepHead, Strategy, Summary, stable_prefix
from tasks.spec import Invariant, TaskSpec

PREFIX = 2  # mini's system message and its first user message (task, policy, step 1)


def to_messages(wire: Sequence[Mapping[str, Any]]) -> tuple[Message, ...]:
    """mini's messages (OpenAI Chat, `extra` stripped) as the harness's neutral messages, one for one."""
    return tuple(ow.from_wire({"messages": list(wire)}))


@dataclass
class MiniContext:
    """The strategy's view of mini's list, and the durable state it needs (the own loop's, read
    from the harness's instructions and events instead of its own submit_step)."""

    strategy: Strategy
    task: TaskSpec
    window: int
    max_output: int
    step_index: int = 0
    step_start: int = -1  # in the transcript (after mini's prefix); -1: step 1, whose notice is the prefix
    attempt: int = 0
    last_failure: str | None = None
    head: StepHead | None = None
    certified: list[Certified] = field(default_factory=list)
    learned: tuple[Invariant, ...] = ()
    summary: Summary | None = None

    def state(
        self, wire: Sequence[Mapping[str, Any]], turn: int, mini_tools: Sequence[Mapping[str, Any]]
    ) -> State:
        msgs = to_messages(wire)
        assert self.head is not None, "the player hands over the step head before the first call"
        # The strategy counts ctxbench's prefix and its messages only (the loop takes its tools off
        # the window first); the model gets mini's prefix and mini's tool.
        extra = count_messages(msgs[:PREFIX]) - count_messages(stable_prefix(self.task))
        extra += tools_tokens(ow.tools_from_wire(mini_tools))[1]
        return State(
            task=self.task,
            tools=TOOLS,
            transcript=msgs[PREFIX:],
            turn=turn,
            step_index=self.step_index,
            step_start=self.step_start,
            attempt=self.attempt,
            certified=tuple(self.certified),
            learned=self.learned,
            last_failure=self.last_failure,
            head=self.head,
            summary=self.summary,
            window=self.window - extra if self.window else 10**9,
            max_output=self.max_output,
        )

    def view(self, wire: Sequence[Mapping[str, Any]], built: Built, state: State) -> list[Mapping[str, Any]]:
        """What mini sends: its own prefix, then the strategy's messages after ctxbench's prefix,
        each of mini's unchanged messages as mini wrote it (byte for byte), a new one (a
        placeholder, a brief, a summary) in the wire form of the proxy's codec."""
        own = {id(m): wire[PREFIX + i] for i, m in enumerate(state.transcript)}
        body = built.messages[built.stable :]
        return [*wire[:PREFIX], *(own.get(id(m)) or ow.to_wire([m])[0] for m in body)]

    def with_summary(self, state: State, text: str) -> State:
        self.summary = Summary(text=text, upto=len(state.transcript))
        return replace(state, summary=self.summary)
