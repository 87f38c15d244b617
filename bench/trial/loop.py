"""The agent loop of one trial (docs/design.md §2): drift, context, model call, tools, certification.

The loop only plays: it keeps the state the next turn is built from and logs what happens as
events (ctxlog/events.py). It keeps no books: every count and total of the trial is read back
from the log (bench/eventlog/tally.py, measures.py). Only the harness writes step status, from
the check's own report (certify.py). Every way a trial can end badly is a named failure reason
of bench.core.outcomes, never a success.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

from bench.core import outcomes, queued
from bench.core.render import HANDOFF_QUESTION, check_result, current_step_block, invariant_line
from bench.core.tokens import count_text
from bench.core.toolspecs import TOOLS
from bench.core.types import Completion, Message, request_hash
from bench.eventlog import events as E
from bench.eventlog.events import EventLog
from bench.providers.base import ContextOverflow, Provider
from bench.sandbox.base import Sandbox
from bench.tracking import tracing
from bench.trial import budget, tidy_ups
from bench.trial import certify as C
from bench.trial import steps as S
from bench.trial.checkcache import CheckCache
from bench.trial.tools import ToolOutcome, Tools
from ctxlog import events as ev
from strategies.base import Built, Certified, State, StepHead, Strategy, Summary
from tasks.spec import TaskSpec

NUDGE = "No tool call. Continue the current step with the tools, then call submit_step."


@dataclass
class LoopSettings:
    window: int
    max_output: int
    max_turns: int
    max_turns_per_step: int
    deadline: float  # time.monotonic() past which the trial fails with `timeout`
    seed: int
    drift: bool
    exec_timeout_s: float = 60.0


class TrialLoop:
    def __init__(self, task: TaskSpec, sandbox: Sandbox, strategy: Strategy, provider: Provider,
                 log: EventLog, settings: LoopSettings, tracer: Any = None, cache: CheckCache | None = None):
        self.task, self.sandbox, self.strategy, self.provider = task, sandbox, strategy, provider
        self.log, self.cfg, self.tracer, self.cache = log, settings, tracer, cache
        self.copy = C.HarnessCopy(task)  # protected files as the harness knows them, kept on the host
        self.tools = Tools(sandbox, self.copy, exec_timeout_s=settings.exec_timeout_s)
        self.transcript: list[Message] = []
        self.certified: list[Certified] = []
        self.learned: tuple = ()
        self.summary: Summary | None = None
        self.turn, self._queued = 0, queued.since_now()  # time queued for the study's allowance, from here
        self.head: StepHead | None = None  # the current step head; FILES re-read after a compaction
        # What a request holds besides its messages, by the harness's own count (the tool schemas),
        # and the provider's counts of the turns' requests next to the harness's (bench/trial/budget.py).
        self.overhead = count_text(json.dumps([t.__dict__ for t in TOOLS], sort_keys=True))
        self.counts: list[tuple[int, int]] = []

    # -- the whole trial ------------------------------------------------------------------
    def run(self) -> None:
        """Play the trial to its end; returns on success, raises TrialFailed (or worse) otherwise."""
        last_commit = self.sandbox.base_commit
        for index, step in enumerate(self.task.steps):
            if self.cfg.drift:
                S.apply_drift(self.task, step, self.sandbox, self.log, self.turn, self.copy.apply)
            head, dirty = S.read_head(step, self.sandbox, last_commit)
            self.log.append(ev.StepStart(
                turn=self.turn, step=step.id, index=index, repo_commit=head.repo_commit, tree=head.tree,
                files=[[p, c] for p, c in head.files], drift_note=head.drift_note, dirty_files=dirty,
                new_session=getattr(self.strategy, "fresh_session_per_step", False),
                invariants=[[i.id, list(i.anchors)] for i in self.task.standing(index)]))
            self.transcript.append(Message(role="user", content=current_step_block(step)))
            self.head = head
            if not self._run_step(index):
                raise outcomes.failure("step_failed", f"{step.id} not certified within its turn budget")
            last_commit = self.sandbox.commit(f"{step.id}: {step.title}", S.AGENT_AUTHOR)
        final = C.certify(self.sandbox, self.copy, self.log, self.turn, "final", self.task.final_check,
                          cache=self.cache)
        if not final.passed:
            raise outcomes.failure("final_check_failed", final.output[-E.FAILURE_DETAIL_TAIL_CHARS:])

    # -- one step -------------------------------------------------------------------------
    def _run_step(self, index: int) -> bool:
        assert self.head is not None, "run() reads the step head before running the step"
        step_start, attempt, last_failure = len(self.transcript) - 1, 0, None
        for _ in range(self.cfg.max_turns_per_step):
            if self.turn >= self.cfg.max_turns:
                raise outcomes.failure("turn_budget", f"{self.cfg.max_turns} turns used")
            if time.monotonic() > self.cfg.deadline + self._queued():  # queueing is the study's (core/queued.py)
                raise outcomes.failure("timeout", "trial wall-clock limit reached")
            state = State(task=self.task, tools=TOOLS, transcript=tuple(self.transcript), turn=self.turn,
                          step_index=index, step_start=step_start, attempt=attempt,
                          certified=tuple(self.certified), learned=self.learned, last_failure=last_failure,
                          head=self.head, summary=self.summary, window=self.window(),
                          max_output=self.cfg.max_output)
            built = self._build(state)
            reply = self._call(built.messages, TOOLS, built.stable, built.tokens, purpose="turn")
            self.transcript.append(reply.as_message())
            self.turn += 1
            if not reply.tool_calls:
                self.transcript.append(Message(role="user", content=NUDGE))
                continue
            passed, results, tried = False, [], attempt
            for call in reply.tool_calls:
                # A model may send anything as arguments; the log and the trace get an object.
                shown = call.args if isinstance(call.args, dict) else {"(not an object)": repr(call.args)[:2000]}
                self.log.append(ev.ToolCall(turn=self.turn - 1, call_id=call.id, name=call.name, args=shown))
                with tracing.tool_span(self.turn - 1, call.name, shown, call_id=call.id) as span:
                    if call.name == "submit_step":
                        text, ok, failure = self._submit(index, call.args)
                        passed = passed or ok
                        if failure is not None:
                            attempt, last_failure = attempt + 1, failure
                    else:
                        res = self.tools.call(call.name, call.args)
                        text, ok = res.text, res.ok
                        self._record_tool(call.name, res)
                    span.set_outputs({"ok": ok, "result": text[-tracing.SPAN_TEXT_CHARS:]})
                self.log.append(ev.ToolResult(turn=self.turn - 1, call_id=call.id, name=call.name, ok=ok,
                                              output=text[-E.TOOL_OUTPUT_TAIL_CHARS:]))
                self.transcript.append(Message(role="tool", content=text, tool_call_id=call.id, name=call.name))
                results.append((call.name, call.args, text, ok))
            for chance in tidy_ups.chances(self.task, self.task.steps[index].id, built.messages, results):
                self.log.append(ev.TidyUp(turn=self.turn - 1, step=self.task.steps[index].id, attempt=tried, **chance))
            if passed:
                return True
        return False

    def window(self) -> int:
        """The window the strategy may fill, in the harness's tokens (bench/trial/budget.py)."""
        return budget.window(self.cfg.window, self.cfg.max_output, self.overhead, self.counts)

    def _record_tool(self, name: str, res: ToolOutcome) -> None:
        """The events of a tool result: policy violations, mistakes, ended processes."""
        turn = self.turn - 1
        if res.policy_violation:
            self.log.append(ev.PolicyViolation(turn=turn, tool=str(name), detail=res.policy_violation))
        if res.error:
            self.log.append(ev.ToolError(turn=turn, tool=str(name), error=res.error, detail=res.text[:300]))
        if res.ended:
            self.log.append(ev.ProcessKilled(turn=turn, when=f"after {name}", processes=list(res.ended)))

    def _submit(self, index: int, args: object) -> tuple[str, bool, str | None]:
        """Certify from the check's own report. Returns (text for the model, passed, failure)."""
        step = self.task.steps[index]
        args = args if isinstance(args, dict) else {}
        notes = str(args.get("notes") or "").strip()
        if self.strategy.requires_handoff and not notes:
            return HANDOFF_QUESTION, False, None
        standing = S.in_force(self.task, index)
        chk = C.certify(self.sandbox, self.copy, self.log, self.turn - 1, step.id, step.check, standing, self.cache)
        self.log.append(ev.StepStatus(turn=self.turn - 1, step=step.id, status="passed" if chk.passed else "failed"))
        if not chk.passed:
            tail = chk.output[-S.FAILURE_TAIL_CHARS:]
            return check_result(step.id, False, chk.exit_code, tail), False, tail
        # Invariants count once the step is certified: a failed attempt's tree is not the agent's answer.
        S.record_invariants(self.log, self.turn - 1, standing, chk.invariant_codes)
        invariants = args.get("invariants")
        submitted = [str(x) for x in invariants] if isinstance(invariants, list) else []
        self.learned = S.learn(step, submitted, self.learned, getattr(self.strategy, "invariants_from", "harness"))
        self.certified.append(Certified(step_id=step.id, check=step.check, tree_sha=self.sandbox.tree_sha(),
                                        notes=notes[:S.NOTES_CAP_CHARS],
                                        diffstat=self.sandbox.git("diff", "--stat", "HEAD").strip()))
        text = check_result(step.id, True, 0, "")
        if step.establishes:
            text += "\nEstablished by this step:\n" + "\n".join(invariant_line(i) for i in step.establishes)
        return text, True, None

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
            self.log.append(ev.Compaction(turn=self.turn, tokens_before=built.tokens, tokens_after=after.tokens,
                                          summary_sha=Message(role="user", content=reply.content).sha(),
                                          summary=reply.content, upto=self.summary.upto, usage=reply.usage.__dict__))
            built = after
        if built.dropped:
            self.log.append(ev.ContextTruncation(turn=self.turn, dropped_messages=built.dropped,
                                                 tokens_before=built.tokens_before_drop, tokens_after=built.tokens))
        if built.tokens > state.budget:
            self.log.append(ev.ContextOverflow(turn=self.turn, tokens=built.tokens, budget=state.budget,
                                               window=self.cfg.window, provider_counts=len(self.counts)))
            raise outcomes.failure("context_overflow", f"{built.tokens} tokens > budget {state.budget}")
        return built

    def _refresh_files(self, head: StepHead) -> StepHead:
        listing = set(self.sandbox.list_files())
        files = tuple((p, self.sandbox.read_file(p)) for p, _ in head.files if p in listing)
        if files != head.files:
            self.log.append(ev.HeadRefresh(turn=self.turn, files=[[p, c] for p, c in files]))
        return replace(head, files=files)

    def _call(self, messages: tuple[Message, ...], tools, stable: int, tokens: int | None,
              purpose: str) -> Completion:
        tokens = tokens if tokens is not None else 0
        self.log.context(self.turn, messages, tokens=tokens, stable=stable, purpose=purpose)
        rhash = request_hash(messages, tools, self.cfg.max_output, self.cfg.seed)
        with tracing.model_span(self.turn, rhash, model_id=self.provider.model_id, messages=messages,
                                attrs={"ctxbench.purpose": purpose}) as span:
            cpu0 = time.thread_time()  # this trial's thread only: trials may share a process
            try:
                reply = self.provider.complete(messages, tools, max_tokens=self.cfg.max_output, seed=self.cfg.seed,
                                               cache_breakpoint=stable or None)
            except ContextOverflow as exc:  # the provider's own window: the context is the agent's
                self.log.append(ev.ContextOverflow(turn=self.turn, tokens=tokens, budget=self.cfg.window,
                                                   detail=str(exc)[:E.ERROR_DETAIL_CHARS]))
                raise outcomes.failure("context_overflow", str(exc)[:E.FAILURE_DETAIL_TAIL_CHARS]) from exc
            span.set_completion(reply)
            cpu_s = time.thread_time() - cpu0
        harness = tokens + (self.overhead if tools else 0)  # the whole request, by the harness's count
        estimated = bool(reply.extra.get("usage_estimated"))
        if purpose == "turn" and tokens > 0 and not estimated and reply.usage.prompt > 0:
            self.counts.append((tokens, reply.usage.prompt))
        # Timings and retries are volatile (`t`); kept unrounded, since the trial's totals are their sums.
        self.log.append(ev.ModelCall(
            turn=self.turn, purpose=purpose, model_id=reply.model_id, request_hash=rhash, tokens_harness=harness,
            usage_estimated=estimated, provider_request_hash=reply.request_hash, stop_reason=reply.stop_reason,
            usage=reply.usage.__dict__, cost_usd=reply.cost_usd, content=reply.content,
            tool_calls=[c.__dict__ for c in reply.tool_calls],
            decisions=reply.extra.get("decisions"), slips=reply.extra.get("slips"),
            t={"latency_s": reply.latency_s, "ttft_s": reply.ttft_s, "queue_s": float(reply.extra.get("queue_s", 0.0)),
               "attempts": int(reply.extra.get("attempts", 1)), "cpu_s": cpu_s}))
        if reply.stop_reason == "max_tokens":
            self.log.append(ev.OutputTruncation(turn=self.turn, purpose=purpose, max_tokens=self.cfg.max_output))
            raise outcomes.failure("output_truncation", f"reply cut at max_tokens={self.cfg.max_output}")
        if reply.stop_reason in ("error", "refusal"):
            raise outcomes.failure("model_error",
                                   f"stop_reason={reply.stop_reason}: {reply.content[:E.MODEL_ERROR_HEAD_CHARS]}")
        return reply
