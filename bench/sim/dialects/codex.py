"""Codex CLI's dialect (0.171.0, with a model id it does not know: docs/agents.md): its classic
function tool `exec_command {cmd, ...}`, whose result (`function_call_output`) Codex renders as

    Chunk ID: 3f09a1
    Wall time: 0.0123 seconds
    Process exited with code 0            (or: Process running with session ID N)
    Original token count: 12
    Output:
    <the command's output, as Codex shows it: middle-truncated past its token budget>

and the end of a turn: a reply with no tool call, whose text is Codex's last agent message.

Each ctxbench call but `submit_step` is one `exec_command` whose `cmd` is the command of
mini-swe-agent's dialect for that call (bench/sim/dialects/mini_bash.py: `cat -- PATH`, a
here-document write, ...), so it reads back exactly the same way; Codex runs it in a shell in
the working copy. `submit_step` alone ends the turn: its reply is a text message whose last
line is `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT <JSON of its arguments>` (the reply's own text
before it, then a blank line); beside other calls it is mini's `printf` command instead (a
turn ends only on a reply without calls). Read back, such a message is the assistant's
`submit_step` call and its result `[submitted: ...]`, as mini's dialect renders it.

Codex runs the several `exec_command` calls of one reply concurrently (its shell tools are
parallel): a batch of edits of one file runs in Codex's order, not the sim's (docs/agents.md).
A command that writes both stdout and stderr reads back in the order Codex shows them (not
always the order they were written, as ctxbench's `run` shows them): that is what the model saw.

Everything else passes through as Codex sent it: its developer prompt, `<environment_context>`,
calls of its other tools, and a result of any other form (a command still running, an error of
Codex's own) as its text.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from bench.core.types import Completion, Message, ToolCall
from bench.sim.dialects.mini_bash import SUBMIT, SUBMITTED, decode, encode, rendered

TOOL = "exec_command"
SUBMIT_ID = "codex_submit_{}"  # a submit read back from a text message: Codex keeps no call id for it
_OUTPUT_RE = re.compile(r"\AChunk ID: [^\n]*\nWall time: [^\n]*\nProcess exited with code (?P<rc>-?\d+)\n"
                        r"(?:Original token count: [^\n]*\n)?Output:\n(?P<out>.*)\Z", re.S)
_SUBMIT_RE = re.compile(rf"\A(?:(?P<text>.*)\n\n)?{SUBMIT} (?P<args>\{{[^\n]*\}})\Z", re.S)


def submit_text(content: str, args: dict[str, Any]) -> str:
    """The text of a reply that submits: the reply's own text, then the submission line."""
    line = f"{SUBMIT} {json.dumps(args, ensure_ascii=False, sort_keys=True)}"
    return f"{content}\n\n{line}" if content else line


def submitted(text: str) -> tuple[str, dict[str, Any]] | None:
    """(the reply's own text, submit_step's arguments) of a submitting reply, or None."""
    m = _SUBMIT_RE.match(text)
    if not m:
        return None
    try:
        args = json.loads(m.group("args"))
    except ValueError:
        return None
    return (m.group("text") or "", args) if isinstance(args, dict) else None


def output(text: str) -> tuple[int | None, str]:
    """(exit code, output) of Codex's rendering of a finished command; (None, text) otherwise."""
    m = _OUTPUT_RE.match(text)
    return (int(m.group("rc")), m.group("out")) if m else (None, text)


def result(name: str, args: dict[str, Any], text: str) -> str:
    rc, out = output(text)
    return text if rc is None else rendered(name, args, rc, out)


class Codex:
    def to_ctxbench(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        out: list[Message] = []
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for i, m in enumerate(messages):
            if m.role == "assistant" and m.tool_calls:
                own = []
                for c in m.tool_calls:
                    cmd = c.args.get("cmd") if isinstance(c.args, dict) else None
                    name, args = decode(cmd) if c.name == TOOL and isinstance(cmd, str) else (c.name, c.args)
                    calls[c.id] = (name, args)
                    own.append(ToolCall(c.id, name, args))
                out.append(dataclasses.replace(m, tool_calls=tuple(own)))
            elif m.role == "assistant" and (sub := submitted(m.content)) is not None:
                call = ToolCall(SUBMIT_ID.format(i), "submit_step", sub[1])
                out += [dataclasses.replace(m, content=sub[0], tool_calls=(call,)),
                        Message(role="tool", content=SUBMITTED, tool_call_id=call.id, name=call.name)]
            elif m.role == "tool" and m.tool_call_id in calls:
                name, args = calls[m.tool_call_id]
                out.append(dataclasses.replace(m, content=result(name, args, m.content), name=name))
            else:
                out.append(m)
        return tuple(out)

    def from_ctxbench(self, reply: Completion) -> Completion:
        calls = reply.tool_calls
        if len(calls) == 1 and calls[0].name == "submit_step" and isinstance(calls[0].args, dict):
            return dataclasses.replace(reply, content=submit_text(reply.content, calls[0].args), tool_calls=(),
                                       stop_reason="end_turn")
        return dataclasses.replace(reply, tool_calls=tuple(
            ToolCall(c.id, TOOL, {"cmd": encode(c.name, c.args if isinstance(c.args, dict) else {})}) for c in calls))


DIALECT = Codex()
