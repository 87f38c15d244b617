"""mini-swe-agent's side of a trial: run by the player (bench/agents/mini.py) with the Python of
mini's own venv, so it imports only the standard library and `minisweagent`, never ctxbench.

mini's own agent logic (`DefaultAgent`: its templates, `step`, `query`, its parsing of tool calls,
its observation format, its end-of-task echo) plays; three seams of mini's Python API are used:
- the caller owns `agent.messages`: each instruction is the next user message of one session
  (mini's `run()` would reset it), so step k's request carries every earlier turn. One process
  takes the trial's instructions one after another (config `stay`); the session is also saved to
  a file after each (`state`: the messages, the outputs of the last message's actions, the call
  count), which a new process resumes when the last one ended (or without `stay`, every turn);
- the environment is pluggable: each command goes to the harness, which runs it in the trial's
  sandbox with the same guards as ctxbench's own `run` tool (this process never touches the
  working copy);
- the model is mini's LitellmModel pointed at the harness's model proxy on loopback.

Protocol: JSON lines. The harness writes to stdin; this process answers on the stdout it was given
(everything else mini or litellm prints goes to stderr).

    <- {"config": {...}}                 api_base, model_name, state (the session file), view, stay, settings
    <- {"instruct": TEXT, "api_base": URL}   the instruction of this turn (and the proxy's address for it);
                                         with `stay` the process waits for the next one after `end`
    -> {"turn": N}  <- {"go": true} | {"stop": REASON}      before every model call (the harness counts turns)
       with config `view`: -> {"turn": N, "messages": [...], "tools": [...]}  <- {"go": true, "messages": [...]}
       the harness builds what the model sees from mini's list (bench/agents/mini_context.py); mini
       keeps its whole list, and this call alone is made with the harness's messages
    -> {"exec": CMD, "id": CALL_ID}  <- {"output": TEXT, "returncode": N}
    -> {"end": EXIT_STATUS, "submission": TEXT, "detail": TEXT, "n_calls": N, "trace": TEXT}

How a turn can stop short: mini or litellm raising one of their own errors (AGENT_ABORTS: the
model call failing, the window refused, ...) is the agent aborting, and `end` is the error's
name; any other exception is a bug on ctxbench's side of this seam (SessionAgent,
HarnessEnvironment, the protocol), and `end` is HARNESS_ERROR: never the agent's. Either way
`trace` is the traceback, which the harness keeps in the turn's `agent_turn` event.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

_OUT = os.fdopen(os.dup(1), "w", buffering=1)
# whatever mini or litellm prints (mini's banner on import) must not reach the protocol's stream
os.dup2(2, 1)
sys.stdout = sys.stderr

import litellm.exceptions  # noqa: E402 - after the redirection above
import openai  # noqa: E402
import yaml  # noqa: E402
from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.config import builtin_config_dir  # noqa: E402
from minisweagent.environments.local import LocalEnvironment  # noqa: E402
from minisweagent.exceptions import FormatError, InterruptAgentFlow, LimitsExceeded  # noqa: E402
from minisweagent.models.litellm_model import BASH_TOOL, LitellmModel  # noqa: E402

HARNESS_ERROR = "harness_error"
# mini's and litellm's own errors, read from mini-swe-agent 2.4.6: litellm's API errors all derive
# from openai's (ContextWindowExceededError from openai.BadRequestError); the rest of
# litellm.exceptions (BudgetExceededError, ModelNotMappedError, ...) are its own checks.
AGENT_ABORTS: tuple[type[BaseException], ...] = (
    openai.OpenAIError,
    InterruptAgentFlow,
    *(v for v in vars(litellm.exceptions).values() if isinstance(v, type) and issubclass(v, Exception)),
)
TRACE_CHARS = 4000


def send(obj: dict[str, Any]) -> None:
    _OUT.write(json.dumps(obj) + "\n")
    _OUT.flush()


def recv() -> dict[str, Any]:
    line = sys.stdin.readline()
    if not line:
        raise SystemExit(0)  # the harness closed the session
    return json.loads(line)


class HarnessEnvironment(LocalEnvironment):
    """mini's local environment with `execute` sent to the harness; its end-of-task check is mini's own."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.outputs: list[dict[str, Any]] = []  # outputs of the current model message's actions

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        send({"exec": action.get("command", ""), "id": action.get("tool_call_id", "")})
        reply = recv()
        output = {
            "output": str(reply.get("output", "")),
            "returncode": int(reply.get("returncode", -1)),
            "exception_info": str(reply.get("exception_info", "")),
        }
        self.outputs.append(output)
        self._check_finished(output)
        return output


class ViewModel(LitellmModel):
    """mini's LitellmModel, sending the harness's messages for a call when it gave some (`view`)."""

    view: list[dict] | None = None

    def query(self, messages: list[dict[str, str]], **kwargs: Any) -> dict:
        view, self.view = self.view, None
        return super().query(view if view is not None else messages, **kwargs)


class SessionAgent(DefaultAgent):
    """DefaultAgent with one session over many instructions, and the harness's turn count."""

    view = False  # the harness builds each call's messages from this list (config `view`)

    def query(self) -> dict:
        ask: dict[str, Any] = {"turn": self.n_calls}
        if self.view:
            ask |= {
                "messages": [{k: v for k, v in m.items() if k != "extra"} for m in self.messages],
                "tools": [BASH_TOOL],
            }
        send(ask)
        answer = recv()
        if answer.get("stop"):
            raise LimitsExceeded(
                {
                    "role": "exit",
                    "content": "LimitsExceeded",
                    "extra": {"exit_status": "LimitsExceeded", "submission": "", "detail": answer["stop"]},
                }
            )
        if self.view:
            self.model.view = answer["messages"]  # type: ignore[attr-defined]
        self.env.outputs = []
        return super().query()

    def instruct(self, text: str) -> dict:
        if not self.messages:
            self.extra_template_vars |= {"task": text}
            self.add_messages(
                self.model.format_message(
                    role="system", content=self._render_template(self.config.system_template)
                ),
                self.model.format_message(
                    role="user", content=self._render_template(self.config.instance_template)
                ),
            )
        else:
            while self.messages and self.messages[-1].get("role") == "exit":
                self.messages.pop()
            last = self.messages[-1] if self.messages else {}
            actions = last.get("extra", {}).get("actions", []) if last.get("role") == "assistant" else []
            if (
                actions
            ):  # the turn ended inside this message's actions: their observations, as mini renders them
                self.add_messages(
                    *self.model.format_observation_messages(last, self.env.outputs, self.get_template_vars())
                )
            self.add_messages(self.model.format_message(role="user", content=text))
        while True:
            try:
                self.step()
                self.n_consecutive_format_errors = 0
            except FormatError as e:
                self.n_consecutive_format_errors += 1
                self.add_messages(*e.messages)
                if 0 < self.config.max_consecutive_format_errors <= self.n_consecutive_format_errors:
                    self.add_messages(
                        {
                            "role": "exit",
                            "content": "RepeatedFormatError",
                            "extra": {"exit_status": "RepeatedFormatError", "submission": ""},
                        }
                    )
            except InterruptAgentFlow as e:
                self.add_messages(*e.messages)
            if self.messages[-1].get("role") == "exit":
                return self.messages[-1].get("extra", {})


def session(cfg: dict[str, Any]) -> tuple[SessionAgent, HarnessEnvironment]:
    """mini's agent with its own config, pointed at the proxy, resuming the session so far."""
    base = yaml.safe_load((builtin_config_dir / "mini.yaml").read_text())
    agent_cfg = {**base["agent"], "step_limit": 0, "cost_limit": 0.0, **cfg.get("agent", {})}
    agent_cfg.pop("mode", None)  # the interactive agent's key; this one is not interactive
    model = ViewModel(
        **{
            **base["model"],
            "model_name": cfg["model_name"],
            "model_kwargs": {
                **base["model"].get("model_kwargs", {}),
                "api_base": cfg["api_base"],
                "api_key": "ctxbench-proxy",
                **cfg.get("model_kwargs", {}),
            },
            "cost_tracking": "ignore_errors",
        }
    )
    env = HarnessEnvironment(**{**base.get("environment", {}), **cfg.get("environment", {})})
    agent = SessionAgent(model, env, **agent_cfg)
    agent.view = bool(cfg.get("view"))
    state = Path(cfg["state"])
    if state.exists():  # the session so far
        saved = json.loads(state.read_text())
        agent.messages, env.outputs, agent.n_calls = saved["messages"], saved["outputs"], saved["n_calls"]
        agent.extra_template_vars |= saved.get("template_vars", {})
    return agent, env


def stopped(status: str, exc: BaseException) -> dict[str, Any]:
    return {
        "end": status,
        "submission": "",
        "detail": f"{exc}"[-2000:],
        "trace": traceback.format_exc()[-TRACE_CHARS:],
    }


def main() -> int:
    cfg = recv()["config"]
    try:
        agent, env = session(cfg)
    except Exception as exc:  # nothing of the agent has run yet: building the session is ours
        send({**stopped(HARNESS_ERROR, exc), "n_calls": 0})
        return 1
    while True:  # one instruction, or (config `stay`) one after another until the harness closes stdin
        ask = recv()
        if ask.get("api_base"):  # the proxy serves each turn on a port of its own
            agent.model.config.model_kwargs["api_base"] = ask["api_base"]
        try:
            extra = agent.instruct(ask["instruct"])
            end = {
                "end": extra.get("exit_status", ""),
                "submission": extra.get("submission", ""),
                "detail": extra.get("detail", ""),
            }
        except AGENT_ABORTS as exc:  # mini aborts the step (e.g. ContextWindowExceededError): say which
            agent.messages.append(
                {"role": "exit", "content": str(exc), "extra": {"exit_status": type(exc).__name__}}
            )
            end = stopped(type(exc).__name__, exc)
        except Exception as exc:  # a bug of ours (SessionAgent, HarnessEnvironment): never the agent's abort
            end = stopped(HARNESS_ERROR, exc)
        Path(cfg["state"]).write_text(
            json.dumps(  # a process of the next turn resumes it, should this one end
                {
                    "messages": agent.messages,
                    "outputs": env.outputs,
                    "n_calls": agent.n_calls,
                    "template_vars": {"task": agent.extra_template_vars.get("task", "")},
                },
                default=repr,
            )
        )
        send({**end, "n_calls": agent.n_calls})
        if not cfg.get("stay") or end["end"] == HARNESS_ERROR:
            return 0


if __name__ == "__main__":
    sys.exit(main())
