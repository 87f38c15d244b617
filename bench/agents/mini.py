"""mini-swe-agent as a Player of a trial (bench/trial/player.py; docs/agents.md).

mini's own agent logic runs in a process of its own venv (bench/agents/mini_driver.py), one
session for the whole trial: each step is the next instruction of that session, given over the
pipe of one long-lived process (`keep_process`; it waits idle on the host between turns, holding
nothing in the sandbox), or of a new process resuming the session's file when the last one ended. Its model calls go to the trial's model proxy on loopback (bench/proxy/),
served during the turn, which records them; each command it
runs comes here and runs in the trial's sandbox through ctxbench's own `run` tool (the same
sandbox, uid, limits, reaping and protected-file restore as ctxbench's loop), and is logged as a
`tool_call`/`tool_result` of the model call that asked for it.

Why mini's process on the host is honest: it only templates messages, calls the model and hands
each command over; a model's reply cannot make it do anything else (mini executes actions only
through the environment, which is ours), and it never sees the working copy, so the agent's
reach is the sandbox's, as for ctxbench's own loop.

How its turn ends, in the outcome table (bench/core/outcomes.py): mini's end-of-task echo is a
submission (the harness certifies); the harness's turn limits stop it (`gave_up` the step, or the
trial's `turn_budget`/`timeout`); mini aborting on a context-window error is `context_overflow`;
any other abort of mini or litellm, a driver that dies, hangs past `limits.turn_timeout_s` or
floods past `limits.output_limit_bytes` is the agent's `model_error`/`timeout` — unless the proxy
saw the model behind it fail (`provider_error`), or the harness crashed (`harness_error`: in the
proxy, or ctxbench's own code in the driver, which says so; its traceback is in `agent_turn`).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

from bench.agents.install import installed
from bench.agents.instruct import instruction_text
from bench.agents.mini_context import PREFIX, MiniContext
from bench.agents.spec import AgentSpec
from bench.core import outcomes
from bench.core.types import Message
from bench.eventlog.writer import TOOL_OUTPUT_TAIL_CHARS
from bench.providers.base import Provider
from bench.proxy.api import Request
from bench.proxy.server import ModelProxy
from bench.trial import steps
from bench.trial.loop import record_tool, submission
from bench.trial.player import Instruction, Seat, StepTurnsUsed, TurnEnd
from bench.trial.tools import Tools
from ctxlog import events as ev
from strategies.base import Certified, Strategy

DRIVER = Path(__file__).with_name("mini_driver.py")
ABORTED_ON_WINDOW = ("ContextWindowExceededError",)
GAVE_UP_STATUSES = ("LimitsExceeded", "RepeatedFormatError", "TimeExceeded")
HARNESS_ERROR = "harness_error"  # mini_driver.py's `end` for a bug on our side of it (not mini's abort)
DETAIL_CHARS = 2000
KEEP_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR")  # the driver gets these of ours and no other (no keys)


def _turn_detail(end: dict[str, Any]) -> str:
    """An `agent_turn`'s detail: how the turn ended and, for an abort or a crash, the driver's
    traceback (its last lines, which name where)."""
    head = f"{end.get('end', '')}: {end.get('detail', '')}"
    trace = str(end.get("trace") or "")
    if not trace:
        return head[:DETAIL_CHARS]
    head = head[: DETAIL_CHARS // 4]
    return f"{head}\n{trace[-(DETAIL_CHARS - len(head) - 1) :]}"


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
    _close_pipes(proc)


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            try:
                pipe.close()
            except OSError:  # a process that died with input unread: nothing to flush to
                pass


class AgentGone(Exception):
    """The driver process ended, hung or flooded: the agent's failure (`detail` says which)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class MiniPlayer:
    applies_strategy = (
        True  # mini's list is ours to build: `agent.context=strategy` (bench/agents/mini_context.py)
    )

    def __init__(
        self,
        spec: AgentSpec,
        provider: Provider,
        *,
        seed: int,
        window: int,
        relative: bool,
        max_output: int,
        exec_timeout_s: float,
        strategy: Strategy | None = None,
        keep_process: bool = True,
    ) -> None:
        self.spec, self.provider, self.seed = spec, provider, seed
        # one process for the trial, given one instruction after another over its pipe (else one per
        # turn, resuming the session file: ~5 s of CPU importing litellm each time)
        self.keep_process = keep_process
        self.idle = False  # its process ended its turn by the protocol and waits for the next instruction
        self.printed = 0
        self.strategy = strategy  # None: mini's own policy (the whole list every call)
        # one session for the whole trial; under `subagent` a fresh context at every step head
        self.fresh_session_per_step = bool(strategy and strategy.fresh_session_per_step)
        self.context: MiniContext | None = None
        self.step_text: str | None = None  # a new step's instruction, until it is found in mini's list
        self.claim: dict[str, Any] = {}  # the last submission's hand-off, for the strategy's durable state
        self.window, self.relative, self.max_output, self.exec_timeout_s = (
            window,
            relative,
            max_output,
            exec_timeout_s,
        )
        self.turn_timeout_s = spec.limits.turn_timeout_s
        self.output_limit = spec.limits.output_limit_bytes
        self.proc: subprocess.Popen[bytes] | None = None
        self.proxy: ModelProxy | None = None
        self.started = False
        self.last_index = -1
        self.turn = 0  # the referee's index of the model call in flight (tool calls are logged at it)

    # -- the Player protocol -------------------------------------------------------------------
    def start(self, seat: Seat) -> None:
        self.seat = seat
        self.python = installed(self.spec)  # a ConfigError naming how to install it, before anything runs
        self.tools = Tools(seat.sandbox, seat.copy, exec_timeout_s=self.exec_timeout_s)
        self.proxy = ModelProxy(
            self.provider,
            seat.log,
            seed=self.seed,
            window=self.window,
            relative=self.relative,
            max_output=self.max_output,
            rewrite=self.spec.proxy_rewrite,
        )
        if self.strategy is not None:
            self.context = MiniContext(self.strategy, seat.task, self.window, self.max_output)
        self.home = tempfile.TemporaryDirectory(prefix="ctxbench-mini-")
        self.state = Path(self.home.name) / "session.json"
        self.env = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
        self.env.update(self.spec.env)
        self.env.update(
            {
                "HOME": self.home.name,
                "MSWEA_GLOBAL_CONFIG_DIR": self.home.name,
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
                "PYTHONUNBUFFERED": "1",
            }
        )

    def play(self, instruction: Instruction) -> TurnEnd:
        assert self.proxy is not None
        before, first = self.proxy.requests, not self.started
        text = self._instruction(instruction)
        if self.context is not None:
            self._follow(instruction, text)
        self.started, self.last_index = True, instruction.index
        pending: outcomes.TrialFailed | None = None
        end: dict[str, Any] = {}
        deadline = time.monotonic() + self.turn_timeout_s
        self.proxy.start()
        try:
            if self.proc is not None and self.proc.poll() is not None:
                self.close()
            if (
                self.proc is None
            ):  # the first turn, or the last one's process ended: a new one resumes the session
                self._spawn()
            assert self.proc is not None
            self.printed = os.fstat(self.stderr.fileno()).st_size  # what it may print is counted per turn
            self.idle = False
            self._send({"instruct": text, "api_base": self.proxy.url + "/v1"})
            while not end:
                msg = self._recv(deadline)
                if "turn" in msg:
                    try:
                        self.turn = self.seat.referee.take_turn()
                        self.proxy.turn = self.turn
                        if self.context is None:
                            self._send({"go": True})
                        else:
                            self._send({"go": True, "messages": self._view(msg)})
                    except StepTurnsUsed as exc:
                        self._send({"stop": str(exc)})
                    except outcomes.TrialFailed as exc:  # turn_budget, timeout: after mini has stopped
                        pending = exc
                        self._send({"stop": exc.reason})
                elif "exec" in msg:
                    self._send(self._exec(str(msg["exec"]), str(msg.get("id") or "")))
                elif "end" in msg:
                    end = msg
            if self.keep_process and end.get("end") != HARNESS_ERROR:
                exit_code: int | None = None  # it waits for the next instruction (reap leaves it)
                self.idle = self.proc.poll() is None
            else:
                exit_code = self.proc.wait(timeout=30)
        except AgentGone as gone:
            end = {"end": gone.reason, "detail": str(gone)}
            exit_code = self.proc.poll() if self.proc is not None else None
        except subprocess.TimeoutExpired:
            exit_code = None
        finally:
            self.reap()
        self.seat.log.append(
            ev.AgentTurn(
                turn=self.turn,
                agent=self.spec.name,
                step=instruction.step.id,
                attempt=int(instruction.retry),
                instruction=text if first else text[-2000:],
                exit_code=exit_code,
                requests=self.proxy.requests - before,
                agent_count=end.get("n_calls"),
                detail=_turn_detail(end),
            )
        )
        return self._verdict(end, pending)

    def reap(self) -> None:
        """Stop serving the model and end mini's process, unless it ended its turn by the protocol
        and waits, idle, for the next instruction (`keep_process`): it is on the host, blocked on
        its stdin, and holds nothing in the sandbox. Nothing of the agent runs in the sandbox
        between its commands: each `run` reaps what it started before its result comes back
        (bench/trial/tools.py)."""
        if self.proxy is not None:
            self.proxy.stop()
        if self.idle and self.proc is not None and self.proc.poll() is None:
            return
        self.close()

    def close(self) -> None:
        """End mini's process (the trial is over, or its turn ended otherwise than by the protocol)."""
        self.idle = False
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        if self.proc is not None:
            _close_pipes(self.proc)
            self.stderr.close()
        self.proc = None

    def _spawn(self) -> None:
        self.stderr = open(Path(self.home.name) / "driver.stderr", "w+b")  # noqa: SIM115 - closed by close()
        self.proc = subprocess.Popen(
            [str(self.python), str(DRIVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=self.env,
            cwd=self.home.name,
            start_new_session=True,
        )
        # the Player protocol has no end of trial: an idle process ends with its player (or ctxbench)
        weakref.finalize(self, _end, self.proc)
        self._send(
            {
                "config": {
                    "api_base": self.proxy.url + "/v1" if self.proxy else "",
                    "model_name": self.spec.model_id,
                    "state": str(self.state),
                    "view": self.context is not None,
                    "stay": self.keep_process,
                }
            }
        )

    # -- one turn ------------------------------------------------------------------------------
    def _instruction(self, instruction: Instruction) -> str:
        # mini puts the first one after "Please solve this issue: ": the task's marker opens a line
        return instruction_text(self.seat.task, instruction, self.started, self.last_index, "\n")

    def _exec(self, command: str, call_id: str) -> dict[str, Any]:
        """One command of mini's, run and logged as ctxbench's own loop runs and logs a `run`."""
        log, turn = self.seat.log, self.turn
        log.append(ev.ToolCall(turn=turn, call_id=call_id, name="bash", args={"command": command}))
        res = self.tools.run(command)
        record_tool(log, turn, "bash", res)
        log.append(
            ev.ToolResult(
                turn=turn, call_id=call_id, name="bash", ok=res.ok, output=res.text[-TOOL_OUTPUT_TAIL_CHARS:]
            )
        )
        # mini shows the output without our `exit=` line (it renders the return code itself), and a
        # timeout and the harness's notes as its `exception_info`
        output = res.text.partition("\n")[2] if res.exit_code is not None else res.text
        notes = [line for line in output.split("\n")[:2] if line.startswith(("NOTE:", "POLICY:"))]
        return {
            "output": output,
            "returncode": -1 if res.exit_code is None else res.exit_code,
            "exception_info": ("the command timed out" if res.timed_out else "") + " ".join(notes),
        }

    def _verdict(self, end: dict[str, Any], pending: outcomes.TrialFailed | None) -> TurnEnd:
        assert self.proxy is not None
        if self.proxy.infra_failure:  # the model behind the proxy failed, or we did: never the agent's
            reason, _, detail = self.proxy.infra_failure.partition(": ")
            raise outcomes.failure(reason, detail)
        if pending is not None:
            raise pending
        status, detail = str(end.get("end", "")), str(end.get("detail", ""))
        if status == HARNESS_ERROR:  # ctxbench's side of the driver broke: ours, never the agent's
            raise outcomes.failure("harness_error", f"mini-swe-agent's driver: {detail[:300]}")
        if status == "Submitted":
            try:
                claim = json.loads(str(end.get("submission") or "{}"))
            except ValueError:
                claim = {}
            notes = str(claim.get("notes") or "") if isinstance(claim, dict) else ""
            self.claim = (
                claim
                if isinstance(claim, dict) and claim.get("notes")
                else {"notes": notes or str(end.get("submission") or "")}
            )
            return TurnEnd("submitted", notes=notes or str(end.get("submission") or ""))
        if status in GAVE_UP_STATUSES:
            return TurnEnd("gave_up")
        if status in ABORTED_ON_WINDOW or (self.proxy.counts.get("refused") and "context" in detail.lower()):
            raise outcomes.failure("context_overflow", f"mini-swe-agent aborted the step: {detail[:300]}")
        if status == "hang":
            raise outcomes.failure("timeout", detail)
        raise outcomes.failure("model_error", f"mini-swe-agent stopped ({status}): {detail[:300]}")

    # -- ctxbench's strategy over mini's list (agent.context=strategy) ----------------------
    def _follow(self, instruction: Instruction, text: str) -> None:
        """The strategy's durable state, as the own loop keeps it: a new step certifies the last
        one (read back from the trial's check and commit events) and learns its hand-off."""
        ctx = self.context
        assert ctx is not None
        ctx.head = instruction.head
        if instruction.retry:  # a failed check: its result is the last failure, as the loop shows it
            ctx.attempt, ctx.last_failure = ctx.attempt + 1, text
            return
        if self.started and instruction.index != ctx.step_index:
            self._certified(ctx.step_index)
        ctx.step_index, ctx.attempt, ctx.last_failure = instruction.index, 0, None
        self.step_text = text if self.started else None  # its notice: the user message that says it

    def _certified(self, index: int) -> None:
        ctx = self.context
        assert ctx is not None
        step = self.seat.task.steps[index]
        log = self.seat.log.log()
        if not any(
            c.step == step.id and (c.passed if c.passed is not None else c.exit_code == 0)
            for c in log.of(ev.Check)
        ):
            return  # given up, not certified
        commit = next((c for c in reversed(log.of(ev.Commit)) if c.step == step.id), None)
        diffstat = (
            self.seat.sandbox.git("diff", "--stat", f"{commit.commit}~1", commit.commit).strip()
            if commit is not None and commit.commit
            else ""
        )
        notes, submitted = submission(self.claim)
        ctx.certified.append(
            Certified(
                step_id=step.id,
                check=step.check,
                tree_sha=commit.tree if commit else "",
                notes=notes[: steps.NOTES_CAP_CHARS],
                diffstat=diffstat,
            )
        )
        ctx.learned = steps.learn(step, submitted, ctx.learned, ctx.strategy.invariants_from)
        self.claim = {}

    def _view(self, ask: dict[str, Any]) -> list[Any]:
        """The messages of this call: the strategy over mini's list (bench/agents/mini_context.py),
        its compactions and truncations logged as the own loop logs them."""
        ctx = self.context
        assert ctx is not None and self.proxy is not None
        wire, tools = list(ask.get("messages") or []), list(ask.get("tools") or [])
        if self.step_text is not None:  # the step's notice: the last user message saying it
            at = next(
                (
                    i
                    for i in reversed(range(PREFIX, len(wire)))
                    if wire[i].get("role") == "user" and wire[i].get("content") == self.step_text
                ),
                None,
            )
            if at is not None:
                ctx.step_start, self.step_text = at - PREFIX, None
        ctx.window = self.proxy.effective_window()
        state = ctx.state(wire, self.turn, tools)
        built = ctx.strategy.build(state)
        if built.compact:
            request = ctx.strategy.summary_request(state)
            reply = self.provider.complete(request, (), max_tokens=self.max_output, seed=self.seed)
            with self.proxy.recorder.lock:  # as the own loop logs its summariser's call
                self.proxy.recorder.call(
                    self.turn,
                    "compaction",
                    Request(request, (), self.max_output, False, ""),
                    self.max_output,
                    built.tokens,
                    reply,
                    {},
                )
            state = ctx.with_summary(state, reply.content)
            after = ctx.strategy.build(state)
            self.seat.log.append(
                ev.Compaction(
                    turn=self.turn,
                    tokens_before=built.tokens,
                    tokens_after=after.tokens,
                    summary_sha=Message(role="user", content=reply.content).sha(),
                    summary=reply.content,
                    upto=state.summary.upto if state.summary else 0,
                    usage=reply.usage.__dict__,
                )
            )
            built = after
        if built.dropped:
            self.seat.log.append(
                ev.ContextTruncation(
                    turn=self.turn,
                    dropped_messages=built.dropped,
                    tokens_before=built.tokens_before_drop,
                    tokens_after=built.tokens,
                )
            )
        return ctx.view(wire, built, state)

    # -- the driver's pipe ---------------------------------------------------------------------
    def _send(self, obj: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise AgentGone("exited", f"mini-swe-agent's process is gone ({self._tail()})") from exc

    def _recv(self, deadline: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AgentGone(
                        "hang", f"mini-swe-agent did not end its turn within {self.turn_timeout_s:g}s"
                    )
                ready = sel.select(min(left, 0.5))
                if self.proxy is not None and self.proxy.infra_failure:  # mini would retry a 500 for minutes
                    raise AgentGone(
                        "model_failed", f"the model behind the proxy failed: {self.proxy.infra_failure}"
                    )
                if os.fstat(self.stderr.fileno()).st_size - self.printed > self.output_limit:
                    raise AgentGone("flood", f"mini-swe-agent printed more than {self.output_limit} bytes")
                if not ready:
                    continue
                chunk = self.proc.stdout.readline(self.output_limit + 1)
                if not chunk:
                    raise AgentGone(
                        "exited", f"mini-swe-agent exited with {self.proc.wait()} ({self._tail()})"
                    )
                line += chunk
                if len(line) > self.output_limit:
                    raise AgentGone("flood", f"mini-swe-agent printed more than {self.output_limit} bytes")
        try:
            msg = json.loads(line)
        except ValueError as exc:
            raise AgentGone(
                "garbled", f"mini-swe-agent sent a line that is not the protocol: {line[:200]!r}"
            ) from exc
        return msg if isinstance(msg, dict) else {}

    def _tail(self) -> str:
        self.stderr.flush()
        self.stderr.seek(0, os.SEEK_END)
        size = self.stderr.tell()
        self.stderr.seek(max(size - 600, 0))
        text = self.stderr.read().decode(errors="replace").strip().splitlines()
        self.stderr.seek(0, os.SEEK_END)
        return text[-1] if text else "no output"
