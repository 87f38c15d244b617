"""Codex CLI as a Player of a trial (bench/trial/player.py; docs/agents.md).

Codex runs inside the trial's Docker sandbox, as the sandbox's agent uid, from its static musl
binary bind-mounted read-only (the install in the agents' cache: bench/agents/install.py). One
session for the whole trial: step k is the next instruction of it (`codex exec --json` first,
`codex exec --json resume --last` after), one sandbox exec per turn that ends when Codex ends its
turn, and is reaped. Its commands are its own (`exec_command`, run by Codex in a shell in /work),
so after every turn the protected files are put back as ctxbench's `run` puts them back.

Its model is the trial's model proxy (bench/proxy/), which records every request. The sandbox
keeps `network_mode=none`: the proxy's unix socket is in a folder bind-mounted read-only, and
since Codex's HTTP client speaks TCP only, the in-sandbox forwarder (bench/agents/forward.py,
shipped in that folder, run by the turn's own exec as the agent's uid) carries 127.0.0.1:PORT to
it. Codex's config (`config.toml`: the proxy as its Responses API provider, no sandbox of its own,
no update check, analytics or plugins) is written into its home on the sandbox's tmpfs at every
turn, from the agent's YAML (conf/agent/codex.yaml).

Every acting model call is a turn the referee counts: the proxy asks it before it forwards a
main-thread request (`ModelProxy.gate`); when the step's turns are spent, or a trial limit is
reached, the request is refused with a 400, Codex ends its turn, and the step is given up or the
trial fails as the limit says.

How a turn ends, in the outcome table (bench/core/outcomes.py): Codex ending its turn (exit 0,
`turn.completed`) is a submission, and the harness certifies, with Codex's last message as the
hand-off; the proxy's refusal of an over-window request ends Codex's turn with exit 1, which is
`context_overflow`; any other non-zero exit, a turn without `turn.completed`, or more than
`limits.output_limit_bytes` printed is `model_error`; no end within `limits.turn_timeout_s` is
`timeout` — all the agent's, unless the proxy saw the model behind it fail (`provider_error`), the
proxy crashed or the forwarder could not reach the proxy (`harness_error`).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.agents.install import cache_root, installed
from bench.agents.instruct import instruction_text
from bench.agents.spec import AgentSpec
from bench.core import outcomes
from bench.core.types import Message
from bench.providers.base import Provider
from bench.proxy.server import ModelProxy
from bench.sandbox.base import ExecResult, Mount
from bench.trial.player import Instruction, Seat, StepTurnsUsed, TurnEnd
from ctxlog import events as ev

FORWARDER = Path(__file__).with_name("forward.py")
AGENT_DIR = "/opt/ctxbench-agent"  # the agent's install, read-only in the sandbox
PROXY_DIR = "/opt/ctxbench-proxy"  # the proxy's socket and the forwarder, read-only in the sandbox
SOCKET = "m.sock"
PORT = 7878  # the forwarder's, on the sandbox's own loopback (network_mode=none keeps one)
KEEP_CHARS = 60_000  # the tail of Codex's output read back per turn: its last message and how it ended
FORWARDER_FAILED = 97  # the turn's exit when the forwarder could not start: nothing of Codex ran
DETAIL_CHARS = 2000
_LINE_RE = re.compile(r"^ctxbench-(?P<key>exit|bytes|rollout|compacted) (?P<value>\d+)$", re.M)


def _fill(template: str, values: dict[str, str]) -> str:
    """`{key}` of the named keys replaced, any other brace left alone (a config file may hold some)."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


class CodexPlayer:
    fresh_session_per_step = False  # one session for the whole trial
    sets_knobs = True  # its compaction knobs under an arm (`arms.<arm>.knobs`): `codex exec -c knob=N`

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
        arm: str = "",
    ) -> None:
        assert spec.install is not None, "agent=own has no player"
        self.spec, self.provider, self.seed, self.arm = spec, provider, seed, arm
        self.window, self.relative, self.max_output = window, relative, max_output
        self.turn_timeout_s = spec.limits.turn_timeout_s
        self.output_limit = spec.limits.output_limit_bytes
        self.exe = installed(spec)  # a ConfigError naming how to install it, before the sandbox exists
        # The proxy's folder, made before the sandbox so that it can be mounted: the socket (made
        # again at every turn) and the forwarder, read-only inside.
        self.folder = tempfile.TemporaryDirectory(prefix="ctxbench-codex-")
        here = Path(self.folder.name)
        here.chmod(0o755)  # the agent's uid must reach the socket (the proxy makes it 0666)
        shutil.copyfile(FORWARDER, here / FORWARDER.name)
        (here / FORWARDER.name).chmod(0o444)
        self.mounts = (Mount(spec.cache_dir(cache_root()), AGENT_DIR), Mount(here, PROXY_DIR))
        self.proxy: ModelProxy | None = None
        self.spent = ""  # why the proxy refused an acting request this turn (the step's turns are spent)
        self.limit: outcomes.TrialFailed | None = (
            None  # a trial limit reached this turn (turn_budget, timeout)
        )
        self.started = False
        self.last_index = -1

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
            tcp=False,
            socket_path=Path(self.folder.name) / SOCKET,
        )
        self.proxy.gate = self._gate

    def play(self, instruction: Instruction) -> TurnEnd:
        assert self.proxy is not None
        proxy = self.proxy
        before, refused_before, first = proxy.requests, proxy.counts.get("refused", 0), not self.started
        since = len(self.seat.log.log().of(ev.ModelCall))  # the model calls before this turn
        text = self._instruction(instruction)
        self.started, self.last_index = True, instruction.index
        self.spent, self.limit, proxy.turn = "", None, self.seat.referee.turns
        knobs, counted = self._knobs(), proxy.overhead or 0  # the overhead the knobs were counted above
        proxy.start()
        try:
            res = self.seat.sandbox.exec(
                self._script(first, knobs),
                timeout=self.turn_timeout_s,
                reap=True,
                env=self._env(text),
                output_limit_chars=KEEP_CHARS + 4000,
            )
        finally:
            proxy.stop()
        last = max(self.seat.referee.turns - 1, 0)  # the turn's last acting model call
        restored = self.seat.sandbox.restore(self.seat.copy.files, self.seat.copy.protected)
        if restored:
            self.seat.log.append(ev.PolicyViolation(turn=last, tool="codex", detail=", ".join(restored)))
        if res.ended:
            self.seat.log.append(
                ev.ProcessKilled(turn=last, when="after the agent's turn", processes=list(res.ended))
            )
        end = _read(res)
        self._compactions(since, end["compacted"])
        said = (
            f"knobs: {' '.join(f'{k}={v}' for k, v in knobs.items())} (overhead {counted})\n" if knobs else ""
        )
        self.seat.log.append(
            ev.AgentTurn(
                turn=last,
                agent=self.spec.name,
                step=instruction.step.id,
                attempt=int(instruction.retry),
                instruction=text if first else text[-2000:],
                exit_code=end["exit"],
                requests=proxy.requests - before,
                agent_count=end["rollout"],
                detail=(said + end["detail"])[:DETAIL_CHARS],
            )
        )
        return self._verdict(res, end, proxy.counts.get("refused", 0) > refused_before)

    def reap(self) -> None:
        """Each turn's exec ends the forwarder itself, then every process Codex and its commands
        left (reap=True); between turns nothing of the agent's runs, and the proxy does not listen."""
        if self.proxy is not None:
            self.proxy.stop()

    # -- one turn ------------------------------------------------------------------------------
    def _gate(self) -> int:
        """The proxy asks before it forwards an acting request: the referee's turn, or its limit
        (kept here, so the verdict knows which; the proxy answers the request 400)."""
        try:
            return self.seat.referee.take_turn()
        except StepTurnsUsed as exc:
            self.spent = str(exc)
            raise
        except outcomes.TrialFailed as exc:
            self.limit = exc
            raise

    def _knobs(self) -> dict[str, int]:
        """Codex's own compaction knobs for this turn (conf/agent/codex.yaml `arms`), above its fixed
        overhead as the proxy measured it from its first main request. Codex reads them when it
        starts, so the first turn, before any request, counts that overhead as 0: Codex would
        compact earlier than it needs to, never later than the proxy's window."""
        assert self.proxy is not None
        return self.spec.knobs(self.arm, self.window, self.proxy.overhead or 0)

    def _compactions(self, since: int, compacted: int | None) -> None:
        """Each of Codex's own compactions this turn (the proxy's `compaction` thread: Codex's
        `request_kind: compaction`) as a `compaction` event: the tokens of the request that asked for
        the summary, and of the next acting request, which carries the summary instead of the turns;
        beside it Codex's own count of its compactions so far (the `compacted` items of its rollout)."""
        calls = self.seat.log.log().of(ev.ModelCall)[since:]
        for i, c in enumerate(calls):
            if c.purpose != "compaction":
                continue
            after = next((n.tokens_harness for n in calls[i + 1 :] if n.purpose in ("turn", "subagent")), 0)
            self.seat.log.append(
                ev.Compaction(
                    turn=c.turn,
                    tokens_before=c.tokens_harness,
                    tokens_after=after,
                    summary=c.content,
                    summary_sha=Message(role="user", content=c.content).sha() if c.content else "",
                    usage={"trigger": "auto", "agent_count": compacted},
                )
            )

    def _instruction(self, instruction: Instruction) -> str:
        return instruction_text(self.seat.task, instruction, self.started, self.last_index)

    def _env(self, text: str) -> dict[str, str]:
        values = {"model_id": self.spec.model_id, "port": str(PORT)}
        env = {k: _fill(v, values) for k, v in self.spec.env.items()}
        env["CTXBENCH_PROXY_KEY"] = (
            "ctxbench-proxy"  # the proxy takes any key; a real one never enters the sandbox
        )
        env["CTXBENCH_INSTRUCTION"] = text
        for i, content in enumerate(self.spec.config_files.values()):
            env[f"CTXBENCH_FILE_{i}"] = _fill(content, values)
        return env

    def _script(self, first: bool, knobs: dict[str, int]) -> str:
        """The turn, as the agent's uid in the sandbox: Codex's config files written again, the
        forwarder started, Codex run to the end of its turn with its output bounded, then what the
        player reads back: the tail of that output, its size, Codex's exit and its own count of
        model responses (the `token_usage_record`s of its rollout files)."""
        argv = list(self.spec.commands["first" if first else "next"])
        argv[0] = f"{AGENT_DIR}/{self.spec.install.bin}"  # type: ignore[union-attr]
        at = argv.index("exec") + 1 if "exec" in argv else 1  # `exec`'s own option, before `resume`
        argv[at:at] = [a for k, v in knobs.items() for a in ("-c", f"{k}={v}")]
        codex = " ".join(
            '"$CTXBENCH_INSTRUCTION"'
            if a == "{instruction}"
            else shlex.quote(_fill(a, {"model_id": self.spec.model_id}))
            for a in argv
        )
        files = "".join(
            f'mkdir -p "$HOME"/{shlex.quote(str(Path(p).parent))} && '
            f'printf %s "$CTXBENCH_FILE_{i}" > "$HOME"/{shlex.quote(p)} && '
            for i, p in enumerate(self.spec.config_files)
        )
        out = '"$HOME/.ctxbench-turn.out"'
        return (
            f"{files}fw=$(python3 -I -S {PROXY_DIR}/{FORWARDER.name} {PORT} {PROXY_DIR}/{SOCKET}) "
            f"|| exit {FORWARDER_FAILED}\n"
            f'{{ {codex} </dev/null; echo "ctxbench-exit $?"; }} 2>&1 | head -c {self.output_limit + 1} > {out}\n'
            # the forwarder is ours: ended here, so the reap names only what the agent left running
            'kill -9 "$fw"; i=0; while [ $i -lt 200 ] && kill -0 "$fw" 2>/dev/null; do i=$((i+1)); sleep 0.01; done\n'
            f"tail -c {KEEP_CHARS} {out}\n"
            f'printf "\\nctxbench-bytes %s\\n" "$(wc -c < {out})"\n'
            f'printf "ctxbench-rollout %s\\n" "$(cat "$CODEX_HOME"/sessions/*/*/*/rollout-*.jsonl 2>/dev/null '
            f'| grep -c \'"type":"token_usage_record"\')"\n'
            f'printf "ctxbench-compacted %s\\n" "$(cat "$CODEX_HOME"/sessions/*/*/*/rollout-*.jsonl 2>/dev/null '
            f'| grep -c \'"type":"compacted"\')"\n'
        )

    def _verdict(self, res: ExecResult, end: dict[str, Any], overflowed: bool) -> TurnEnd:
        assert self.proxy is not None
        if self.proxy.infra_failure:  # the model behind the proxy failed, or the proxy did: never the agent's
            reason, _, detail = self.proxy.infra_failure.partition(": ")
            raise outcomes.failure(reason, detail)
        if res.exit_code == FORWARDER_FAILED and end["bytes"] is None:
            raise outcomes.failure(
                "harness_error",
                f"the forwarder to the model proxy did not start: {res.output.strip()[-300:]}",
            )
        if self.limit is not None:
            raise self.limit
        if self.spent:
            return TurnEnd("gave_up")
        if res.timed_out:
            raise outcomes.failure("timeout", f"Codex did not end its turn within {self.turn_timeout_s:g}s")
        if end["bytes"] is not None and end["bytes"] > self.output_limit:
            raise outcomes.failure("model_error", f"Codex printed more than {self.output_limit} bytes")
        if end["exit"] == 0 and end["completed"]:
            return TurnEnd("submitted", notes=end["message"])
        if overflowed:
            raise outcomes.failure(
                "context_overflow", f"Codex's turn failed on the window: {end['detail'][:300]}"
            )
        raise outcomes.failure("model_error", f"Codex stopped (exit {end['exit']}): {end['detail'][:300]}")


def _read(res: ExecResult) -> dict[str, Any]:
    """What a turn's output says: Codex's exit, the size of its output, its own count of model
    responses, whether it ended its turn, its last message, and a detail for the record. Codex's
    output is the agent's: it can say anything, and nothing it says can make a failure a success
    (the harness certifies) or a failure of the harness."""
    found = {m.group("key"): int(m.group("value")) for m in _LINE_RE.finditer(res.output)}
    cut = res.output.rfind("\nctxbench-bytes ")
    body = res.output[:cut] if cut >= 0 else res.output
    completed, message, errors = False, "", []
    for line in body.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind, item, error = event.get("type"), _object(event.get("item")), _object(event.get("error"))
        if kind == "turn.completed":
            completed = True
        elif kind == "item.completed" and item.get("type") == "agent_message":
            message = str(item.get("text") or "")
        elif kind in ("turn.failed", "error"):
            errors.append(str(error.get("message") if kind == "turn.failed" else event.get("message")))
    tail = [line for line in body.splitlines() if line.strip()][-3:]
    detail = (
        "; ".join(errors)
        or ("turn.completed" if completed else " | ".join(tail))
        or f"no output (exit {res.exit_code}{', timed out' if res.timed_out else ''})"
    )
    return {
        "exit": found.get("exit"),
        "bytes": found.get("bytes"),
        "rollout": found.get("rollout"),
        "completed": completed,
        "message": message,
        "detail": detail,
        "compacted": found.get("compacted"),
    }


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
