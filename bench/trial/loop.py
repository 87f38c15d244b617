"""ctxbench's own agent loop (docs/design.md §2): one Player of a trial (bench/trial/player.py).

Its shape is mini-swe-agent's: `play` runs `step` until the turn ends; a `step` builds the
context with the strategy, calls the model and acts on the reply through the tools. A
`submit_step` is the end of its turn: the referee (the harness, bench/trial/driver.py) certifies
then and there, and the verdict is the tool's result the model reads. Limits are the referee's,
raised as exceptions. The loop keeps the state the next turn is built from and logs what happens
as events (ctxlog/events.py); it keeps no books: every count and total of the trial is read back
from the log (bench/eventlog/tally.py, measures.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace

from bench.core import outcomes
from bench.core.render import HANDOFF_QUESTION
from bench.core.tokens import count_text
from bench.core.toolspecs import TOOLS
from bench.core.types import Completion, Message, request_hash
from bench.eventlog import writer
from bench.providers.base import ContextOverflow, Provider
from bench.trial import context_window, steps, tidy_ups
from bench.trial.player import GAVE_UP, SUBMITTED, Instruction, Seat, StepTurnsUsed, TurnEnd
from bench.trial.tools import ToolOutcome, Tools
from ctxlog import events as ev
from strategies.base import Built, Certified, State, StepHead, Strategy, Summary

NUDGE = "No tool call. Continue the current step with the tools, then call submit_step."


@dataclass(frozen=True)
class LoopSettings:
    window: int
    max_output: int
    seed: int
    exec_timeout_s: float = 60.0


class LoopPlayer:
    """ctxbench's own agent: a Player (bench/trial/player.py) whose every turn is built by the
    strategy, answered by the provider and acted on through the tools."""

    def __init__(self, strategy: Strategy, provider: Provider, settings: LoopSettings):
        self.strategy, self.provider, self.cfg = strategy, provider, settings
        self.fresh_session_per_step = strategy.fresh_session_per_step
        self.transcript: list[Message] = []
        self.certified: list[Certified] = []
        self.learned: tuple = ()
        self.summary: Summary | None = None
        self.turn = 0  # the index of the turn being played (the referee counts them)
        # The step being played: its index, where its notice is in the transcript, its failed attempts.
        self.index, self.step_start, self.attempt = 0, 0, 0
        self.last_failure: str | None = None
        self.head: StepHead | None = None  # the current step head; FILES re-read after a compaction
        # What a request holds besides its messages, by the harness's own count (the tool schemas),
        # and the provider's counts of the turns' requests next to the harness's (bench/trial/context_window.py).
        self.overhead = count_text(json.dumps([t.__dict__ for t in TOOLS], sort_keys=True))
        self.counts: list[tuple[int, int]] = []

    # -- the Player -----------------------------------------------------------------------
    def start(self, seat: Seat) -> None:
        self.task, self.sandbox, self.log, self.referee = seat.task, seat.sandbox, seat.log, seat.referee
        self.tools = Tools(seat.sandbox, seat.copy, exec_timeout_s=self.cfg.exec_timeout_s)

    def play(self, instruction: Instruction) -> TurnEnd:
        """Turn after turn until a submit_step is certified, or the step's turns are spent."""
        self.transcript.append(Message(role="user", content=instruction.text))
        self.head = instruction.head
        if not instruction.retry:  # a new step: its notice starts it, no attempt failed yet
            self.index, self.step_start = instruction.index, len(self.transcript) - 1
            self.attempt, self.last_failure = 0, None
        while True:
            try:
                if self.step():
                    return TurnEnd(SUBMITTED, certified=True)
            except StepTurnsUsed:
                return TurnEnd(GAVE_UP)

    def reap(self) -> None:
        """Nothing to end: every `run` ends what it started before its result comes back (tools.py)."""

    # -- one turn -------------------------------------------------------------------------
    def step(self) -> bool:
        """Build the context, call the model, act on its reply; True once a check passed."""
        self.turn = self.referee.take_turn()
        assert self.head is not None, "play() hands over the step head before the first turn"
        state = State(
            task=self.task,
            tools=TOOLS,
            transcript=tuple(self.transcript),
            turn=self.turn,
            step_index=self.index,
            step_start=self.step_start,
            attempt=self.attempt,
            certified=tuple(self.certified),
            learned=self.learned,
            last_failure=self.last_failure,
            head=self.head,
            summary=self.summary,
            window=self.window(),
            max_output=self.cfg.max_output,
        )
        built = self._build(state)
        reply = self._call(built.messages, TOOLS, built.stable, built.tokens, purpose="turn")
        self.transcript.append(reply.as_message())
        if not reply.tool_calls:
            self.transcript.append(Message(role="user", content=NUDGE))
            return False
        return self._act(reply, built)

    def _act(self, reply: Completion, built: Built) -> bool:
        passed, results, tried = False, [], self.attempt
        for call in reply.tool_calls:
            # A model may send anything as arguments; the log (and so the trace) gets an object.
            shown = call.args if isinstance(call.args, dict) else {"(not an object)": repr(call.args)[:2000]}
            self.log.append(ev.ToolCall(turn=self.turn, call_id=call.id, name=call.name, args=shown))
            if call.name == "submit_step":
                text, ok = self._submit(call.args)
                passed = passed or ok
            else:
                res = self.tools.call(call.name, call.args)
                text, ok = res.text, res.ok
                record_tool(self.log, self.turn, call.name, res)
            self.log.append(
                ev.ToolResult(
                    turn=self.turn,
                    call_id=call.id,
                    name=call.name,
                    ok=ok,
                    output=text[-writer.TOOL_OUTPUT_TAIL_CHARS :],
                )
            )
            self.transcript.append(Message(role="tool", content=text, tool_call_id=call.id, name=call.name))
            results.append((call.name, call.args, text, ok))
        step_id = self.task.steps[self.index].id
        for chance in tidy_ups.chances(self.task, step_id, built.messages, results):
            self.log.append(ev.TidyUp(turn=self.turn, step=step_id, attempt=tried, **chance))
        return passed

    def window(self) -> int:
        """The window the strategy may fill, in the harness's tokens (bench/trial/context_window.py)."""
        return context_window.window(self.cfg.window, self.cfg.max_output, self.overhead, self.counts)

    def _submit(self, args: object) -> tuple[str, bool]:
        """submit_step ends the turn: the referee certifies now, and its verdict is the tool's result."""
        if (
            refused := Tools.submit_refusal(args)
        ) is not None:  # not its schema: a tool error, nothing certified
            return refused, False
        notes, submitted = submission(args)
        if self.strategy.requires_handoff and not notes:
            return HANDOFF_QUESTION, False
        verdict = self.referee.certify(self.index, self.turn, notes)
        if not verdict.passed:
            self.attempt, self.last_failure = self.attempt + 1, verdict.failure
            return verdict.text, False
        step = self.task.steps[self.index]
        self.learned = steps.learn(step, submitted, self.learned, self.strategy.invariants_from)
        assert verdict.certified is not None
        self.certified.append(verdict.certified)
        return verdict.text, True

    # -- context and model calls ----------------------------------------------------------
    def _build(self, state: State) -> Built:
        built = self.strategy.build(state)
        if built.compact:
            request = self.strategy.summary_request(state)
            reply = self._call(request, (), 0, None, purpose="compaction")
            self.summary = Summary(text=reply.content, upto=len(self.transcript))
            # A summary keeps no file contents, so the step head's FILES (read before this step's
            # edits) would become the newest copy the model can see: re-read them from the tree.
            self.head = self._refresh_files(state.head)
            state = replace(state, summary=self.summary, head=self.head)
            after = self.strategy.build(state)
            self.log.append(
                ev.Compaction(
                    turn=self.turn,
                    tokens_before=built.tokens,
                    tokens_after=after.tokens,
                    summary_sha=Message(role="user", content=reply.content).sha(),
                    summary=reply.content,
                    upto=self.summary.upto,
                    usage=reply.usage.__dict__,
                )
            )
            built = after
        if built.dropped:
            self.log.append(
                ev.ContextTruncation(
                    turn=self.turn,
                    dropped_messages=built.dropped,
                    tokens_before=built.tokens_before_drop,
                    tokens_after=built.tokens,
                )
            )
        if built.tokens > state.budget:
            self.log.append(
                ev.ContextOverflow(
                    turn=self.turn,
                    tokens=built.tokens,
                    budget=state.budget,
                    window=self.cfg.window,
                    provider_counts=len(self.counts),
                )
            )
            raise outcomes.failure("context_overflow", f"{built.tokens} tokens > budget {state.budget}")
        return built

    def _refresh_files(self, head: StepHead) -> StepHead:
        listing = set(self.sandbox.list_files())
        files = tuple((p, self.sandbox.read_file(p)) for p, _ in head.files if p in listing)
        if files != head.files:
            self.log.append(ev.HeadRefresh(turn=self.turn, files=[[p, c] for p, c in files]))
        return replace(head, files=files)

    def _call(
        self, messages: tuple[Message, ...], tools, stable: int, tokens: int | None, purpose: str
    ) -> Completion:
        tokens = tokens if tokens is not None else 0
        self.log.context(self.turn, messages, tokens=tokens, stable=stable, purpose=purpose)
        rhash = request_hash(messages, tools, self.cfg.max_output, self.cfg.seed)
        cpu0 = time.thread_time()  # this trial's thread only: trials may share a process
        try:
            reply = self.provider.complete(
                messages,
                tools,
                max_tokens=self.cfg.max_output,
                seed=self.cfg.seed,
                cache_breakpoint=stable or None,
            )
        except ContextOverflow as exc:  # the provider's own window: the context is the agent's
            self.log.append(
                ev.ContextOverflow(
                    turn=self.turn,
                    tokens=tokens,
                    budget=self.cfg.window,
                    detail=str(exc)[: writer.ERROR_DETAIL_CHARS],
                )
            )
            raise outcomes.failure("context_overflow", str(exc)[: writer.FAILURE_DETAIL_TAIL_CHARS]) from exc
        cpu_s = time.thread_time() - cpu0
        harness = tokens + (self.overhead if tools else 0)  # the whole request, by the harness's count
        estimated = bool(reply.extra.get("usage_estimated"))
        if purpose == "turn" and tokens > 0 and not estimated and reply.usage.prompt > 0:
            self.counts.append((tokens, reply.usage.prompt))
        # Timings and retries are volatile (`t`); kept unrounded, since the trial's totals are their sums.
        self.log.append(
            ev.ModelCall(
                turn=self.turn,
                purpose=purpose,
                model_id=reply.model_id,
                request_hash=rhash,
                tokens_harness=harness,
                usage_estimated=estimated,
                provider_request_hash=reply.request_hash,
                stop_reason=reply.stop_reason,
                usage=reply.usage.__dict__,
                cost_usd=reply.cost_usd,
                content=reply.content,
                tool_calls=[c.__dict__ for c in reply.tool_calls],
                decisions=reply.extra.get("decisions"),
                slips=reply.extra.get("slips"),
                t={
                    "latency_s": reply.latency_s,
                    "ttft_s": reply.ttft_s,
                    "queue_s": float(reply.extra.get("queue_s", 0.0)),
                    "attempts": int(reply.extra.get("attempts", 1)),
                    "cpu_s": cpu_s,
                },
            )
        )
        if reply.stop_reason == "max_tokens":
            self.log.append(
                ev.OutputTruncation(turn=self.turn, purpose=purpose, max_tokens=self.cfg.max_output)
            )
            raise outcomes.failure("output_truncation", f"reply cut at max_tokens={self.cfg.max_output}")
        if reply.stop_reason in ("error", "refusal"):
            raise outcomes.failure(
                "model_error",
                f"stop_reason={reply.stop_reason}: {reply.content[: writer.MODEL_ERROR_HEAD_CHARS]}",
            )
        return reply


def record_tool(log: writer.EventLog, turn: int, name: str, res: ToolOutcome) -> None:
    """The events of a tool result besides the result itself: policy violations, mistakes, ended
    processes (every player's tools, bench/agents/ too)."""
    if res.policy_violation:
        log.append(ev.PolicyViolation(turn=turn, tool=str(name), detail=res.policy_violation))
    if res.error:
        log.append(ev.ToolError(turn=turn, tool=str(name), error=res.error, detail=res.text[:300]))
    if res.ended:
        log.append(ev.ProcessKilled(turn=turn, when=f"after {name}", processes=list(res.ended)))


def submission(args: object) -> tuple[str, list[str]]:
    """submit_step's arguments as (the hand-off notes, the invariants the model submitted).
    A model may send anything: what is not a string list is dropped."""
    args = args if isinstance(args, dict) else {}
    notes = str(args.get("notes") or "").strip()
    invariants = args.get("invariants")
    return notes, [str(x) for x in invariants] if isinstance(invariants, list) else []
