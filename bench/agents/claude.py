"""Claude Code as a Player of a trial (bench/trial/player.py; docs/agents.md).

Claude Code runs where its commands run: inside the trial's sandbox, as the sandbox's agent uid,
with `HOME` on the sandbox's tmpfs and no network. Its native binary (from the npm package in the
agent cache, bench/agents/install.py) and the model proxy's unix socket are host folders the
sandbox mounts read-only (`mounts`: bench/sandbox/base.py's Mount); it reaches the proxy through
`ANTHROPIC_UNIX_SOCKET`. Each step is the next instruction of one session: `--session-id` at the
first, `--resume` after, each one exec of the sandbox that ends with the turn and is reaped.

Every model call Claude Code makes goes through the proxy, which records it (bench/proxy/) and,
before forwarding an acting request (main thread or subagent), asks the referee for the turn (`ModelProxy.gate`): when
a turn limit says no, Claude Code gets a 400 naming it and ends its turn, and the step is given
up (`StepTurnsUsed`) or the trial ends (`turn_budget`, `timeout`). Its own compactions are the
proxy's `compaction` thread, and stream-json's `compact_boundary` is logged as a `compaction`
event with Claude Code's tokens before and after. After each turn its session file
(`$HOME/.claude/projects/<cwd slug>/<id>.jsonl`) is copied beside the event log, before the
sandbox goes.

How its turn ends, in the outcome table (bench/core/outcomes.py): a `result` that is not an
error is a submission (its text the hand-off; the harness certifies); an error result after the
proxy refused a request as over the window is `context_overflow`; any other error result, an
exit without a result, or output past `limits.output_limit_bytes` is `model_error`; no end within
`limits.turn_timeout_s` is `timeout` — the agent's, unless the proxy saw the model behind it fail
(`provider_error`) or itself broke (`harness_error`).
"""

from __future__ import annotations

import json
import shlex
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench.agents.install import installed
from bench.agents.instruct import instruction_text
from bench.agents.spec import AgentSpec
from bench.core import outcomes
from bench.core.types import Message
from bench.providers.base import Provider
from bench.proxy.server import ModelProxy
from bench.sandbox.base import Mount
from bench.trial.player import Instruction, Seat, StepTurnsUsed, TurnEnd
from ctxlog import events as ev

BIN_DIR = "/opt/ctxbench-agent"  # the install's folder of the binary, read-only in the sandbox
SOCKET_DIR = (
    "/opt/ctxbench-proxy"  # the proxy socket's folder, read-only (a socket needs no write to connect)
)
SOCKET = "model.sock"
WORK = "/work"  # the working copy in the sandbox, Claude Code's cwd
DEFAULT_HOME = "/tmp/agent-home"
SESSION_FILE = "agent_session.jsonl"  # beside the trial's events.jsonl
SESSION_LIMIT = 64 << 20  # characters of the session file copied out (it is ~170 KB a session)
# namespace: the session id follows from the seed
SESSIONS = uuid.UUID("5b0c8c5e-2f55-4a8e-9d33-7e1c0e0a1c1d")
TRUNCATED = "[ctxbench: output truncated"  # bench/sandbox/base.py's OutputTail marker
DETAIL_CHARS = 2000


def stream_events(output: str) -> list[dict[str, Any]]:
    """The JSON objects of Claude Code's stream-json output (one a line; anything else skipped)."""
    out = []
    for line in output.splitlines():
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


def session_replies(text: str) -> int:
    """Model replies in a Claude Code session file: its assistant entries, one id per reply (a
    reply with several content blocks is several entries), not counting the ones Claude Code
    makes up itself (model `<synthetic>`, e.g. for an API error)."""
    ids = set()
    for obj in stream_events(text):
        msg = obj.get("message") if obj.get("type") == "assistant" else None
        if isinstance(msg, dict) and msg.get("model") != "<synthetic>" and msg.get("id"):
            ids.add(msg["id"])
    return len(ids)


class ClaudePlayer:
    fresh_session_per_step = False  # one session for the whole trial

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
    ) -> None:
        self.spec, self.provider, self.seed = spec, provider, seed
        self.window, self.relative, self.max_output = window, relative, max_output
        self.turn_timeout_s = spec.limits.turn_timeout_s
        self.output_limit = spec.limits.output_limit_bytes
        exe = installed(spec)  # a ConfigError naming how to install it, before the sandbox exists
        # The socket's folder lives as long as the player; the sandbox mounts it at creation.
        self._sockets = tempfile.TemporaryDirectory(prefix="ctxbench-proxy-")
        Path(self._sockets.name).chmod(0o755)  # the agent's uid must reach the socket inside it
        self.mounts = (Mount(exe.parent, BIN_DIR), Mount(Path(self._sockets.name), SOCKET_DIR))
        self.bin = f"{BIN_DIR}/{exe.name}"
        self.session = str(uuid.uuid5(SESSIONS, str(seed)))
        self.home = spec.env.get("HOME", DEFAULT_HOME)
        self.proxy: ModelProxy | None = None
        self.started = False
        self.last_index = -1
        self.stopped: BaseException | None = None  # what the referee said when it refused a turn

    # -- the Player protocol -------------------------------------------------------------------
    def start(self, seat: Seat) -> None:
        self.seat = seat
        self.proxy = ModelProxy(
            self.provider,
            seat.log,
            seed=self.seed,
            window=self.window,
            relative=self.relative,
            max_output=self.max_output,
            socket_path=Path(self._sockets.name) / SOCKET,
            tcp=False,
            model_name=self.spec.model_id,
        )
        self.proxy.gate = self._gate
        self.env = {k: v.replace("{socket}", f"{SOCKET_DIR}/{SOCKET}") for k, v in self.spec.env.items()}
        self.env.setdefault("HOME", self.home)

    def play(self, instruction: Instruction) -> TurnEnd:
        assert self.proxy is not None
        before, first = self.proxy.requests, not self.started
        text = self._instruction(instruction)
        self.started, self.last_index, self.stopped = True, instruction.index, None
        argv = [self._arg(a, text) for a in self.spec.commands["first" if first else "next"]]
        command = f'mkdir -p "$HOME" && cd {WORK} && exec {shlex.join(argv)}'
        self.proxy.start()
        try:
            res = self.seat.sandbox.exec(
                command,
                timeout=self.turn_timeout_s,
                reap=True,
                env=self.env,
                output_limit_chars=self.output_limit,
            )
        finally:
            self.proxy.stop()
        events = stream_events(res.output)
        result: dict[str, Any] = next((e for e in reversed(events) if e.get("type") == "result"), {})
        self._compactions(events)
        replies = self._copy_session()
        detail = (
            f"{result.get('subtype', 'no result')}: {str(result.get('result', ''))[: DETAIL_CHARS // 2]}"
            f"\nsession file: {replies} model replies; ended: {', '.join(res.ended[:5]) or 'nothing'}"
        )
        if not result:
            detail += f"\n{res.output[-(DETAIL_CHARS // 2) :]}"
        self.seat.log.append(
            ev.AgentTurn(
                turn=self.proxy.turn,
                agent=self.spec.name,
                step=instruction.step.id,
                attempt=int(instruction.retry),
                instruction=text if first else text[-2000:],
                exit_code=None if res.timed_out else res.exit_code,
                requests=self.proxy.requests - before,
                agent_count=result.get("num_turns"),
                detail=detail[:DETAIL_CHARS],
            )
        )
        return self._verdict(res.exit_code, res.timed_out, res.output, result)

    def reap(self) -> None:
        """Nothing of the agent's is left: its turn is one exec of the sandbox, reaped when it ends
        (bench/sandbox/judge.py), and the proxy serves only during it."""
        if self.proxy is not None:
            self.proxy.stop()

    # -- one turn ------------------------------------------------------------------------------
    def _gate(self) -> int:
        """The referee's turn for a main-thread request (called by the proxy, while Claude Code waits)."""
        try:
            return self.seat.referee.take_turn()
        except (StepTurnsUsed, outcomes.TrialFailed) as exc:
            self.stopped = exc
            raise

    def _arg(self, arg: str, text: str) -> str:
        """One word of the command: the executable is the mounted binary; a placeholder is a whole word."""
        if arg == "claude":
            return self.bin
        return {"{instruction}": text, "{session}": self.session, "{model_id}": self.spec.model_id}.get(
            arg, arg
        )

    def _instruction(self, instruction: Instruction) -> str:
        return instruction_text(self.seat.task, instruction, self.started, self.last_index)

    def _compactions(self, events: list[dict[str, Any]]) -> None:
        """Each of Claude Code's own compactions (stream-json `compact_boundary`) as a `compaction`
        event: its tokens before and after, and the summary the proxy's compaction thread answered."""
        assert self.proxy is not None
        summaries = [c.content for c in self.seat.log.log().of(ev.ModelCall) if c.purpose == "compaction"]
        boundaries = [
            e for e in events if e.get("type") == "system" and e.get("subtype") == "compact_boundary"
        ]
        for i, b in enumerate(boundaries):
            meta = b.get("compact_metadata") or {}
            summary = (
                str(summaries[len(summaries) - len(boundaries) + i])
                if len(summaries) >= len(boundaries)
                else ""
            )
            self.seat.log.append(
                ev.Compaction(
                    turn=self.proxy.turn,
                    tokens_before=int(meta.get("pre_tokens") or 0),
                    tokens_after=int(meta.get("post_tokens") or 0),
                    summary=summary,
                    summary_sha=Message(role="user", content=summary).sha() if summary else "",
                    usage={"trigger": str(meta.get("trigger", ""))},
                )
            )

    def _copy_session(self) -> int:
        """Copy Claude Code's session file out of the sandbox (beside the event log); its count of replies."""
        res = self.seat.sandbox.exec(
            f'cat "$HOME"/.claude/projects/*/{self.session}.jsonl',
            timeout=60,
            reap=True,
            env={"HOME": self.env["HOME"]},
            output_limit_chars=SESSION_LIMIT,
        )
        path = getattr(self.seat.log, "path", None)
        if res.exit_code == 0 and isinstance(path, Path):
            path.with_name(SESSION_FILE).write_text(res.output, encoding="utf-8")
        return session_replies(res.output) if res.exit_code == 0 else 0

    def _verdict(self, exit_code: int, timed_out: bool, output: str, result: dict[str, Any]) -> TurnEnd:
        assert self.proxy is not None
        if self.proxy.infra_failure:  # the model behind the proxy failed, or we did: never the agent's
            reason, _, detail = self.proxy.infra_failure.partition(": ")
            raise outcomes.failure(reason, detail)
        if isinstance(self.stopped, outcomes.TrialFailed):
            raise self.stopped
        if isinstance(self.stopped, StepTurnsUsed):
            return TurnEnd("gave_up")
        if timed_out:
            raise outcomes.failure(
                "timeout", f"Claude Code did not end its turn within {self.turn_timeout_s:g}s"
            )
        if output.startswith(TRUNCATED):
            raise outcomes.failure(
                "model_error", f"Claude Code printed more than {self.output_limit} characters"
            )
        said = str(result.get("result") or "")
        if result and not result.get("is_error") and exit_code == 0:
            return TurnEnd("submitted", notes=said)
        if self.proxy.counts.get("refused") and "too long" in said.lower():
            raise outcomes.failure("context_overflow", f"Claude Code ended the step: {said[:300]}")
        if not result:
            raise outcomes.failure(
                "model_error",
                f"Claude Code exited {exit_code} without a result: {output.strip()[-300:] or 'no output'}",
            )
        raise outcomes.failure(
            "model_error", f"Claude Code stopped ({result.get('subtype')}, exit {exit_code}): {said[:300]}"
        )
