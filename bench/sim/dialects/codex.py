"""Codex CLI's dialect (0.171.0, with a model id it does not know: docs/agents.md): its classic
function tool `exec_command {cmd, ...}`, whose result (`function_call_output`) Codex renders as

    Chunk ID: 3f09a1
    Wall time: 0.0123 seconds
    Process exited with code 0            (or: Process running with session ID N)
    Original token count: 12
    Output:
    <the command's output, as Codex shows it: middle-truncated past its token budget>

and the end of a turn: a reply with no tool call, whose text is Codex's last agent message.

Each ctxbench call but `submit_step` is the command of mini-swe-agent's dialect for that call
(bench/sim/dialects/mini_bash.py: `cat -- PATH`, a here-document write, ...), so it reads back
exactly the same way; Codex runs it in a shell in the working copy. A reply of one call is one
`exec_command`; a reply of several is ONE `exec_command` running them in the sim's order, each in
a subshell followed by a line `CTXBENCH_CALL_END_<nonce> <its exit code>`, its output split back
at those lines into one result per call (ids `<id>.<k>`). Codex runs the several calls of one
reply concurrently (its shell tools are parallel, with no switch), so separate calls would run
in Codex's order, not the sim's, and two runs of a trial would differ. `submit_step` alone ends the turn: its reply is a text message whose last
line is `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT <JSON of its arguments>` (the reply's own text
before it, then a blank line); beside other calls it is mini's `printf` command instead (a
turn ends only on a reply without calls). Read back, such a message is the assistant's
`submit_step` call and its result `[submitted: ...]`, as mini's dialect renders it.

A command that writes both stdout and stderr reads back in the order Codex shows them (not
always the order they were written, as ctxbench's `run` shows them): that is what the model saw.

Codex's own compaction reads as ctxbench's: its summary request (a user item "You are performing a
CONTEXT CHECKPOINT COMPACTION ...") is a compaction request (the sim's marker line above Codex's own
prompt), and the user item that carries the summary afterwards ("Another language model started to
solve this problem ...") a summary message.

Everything else passes through as Codex sent it: its developer prompt, `<environment_context>`,
calls of its other tools, and a result of any other form (a command still running, an error of
Codex's own) as its text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any

from bench.core.types import Completion, Message, ToolCall
from bench.sim.dialects.mini_bash import SUBMIT, SUBMITTED, decode, encode, rendered
from bench.sim.perception import SUMMARY_MARK
from bench.sim.provider import COMPACTION_MARKER

TOOL = "exec_command"
BATCH_END = "CTXBENCH_CALL_END"
_BATCH_LINE_RE = re.compile(r"\n\)\nprintf '\\n%s %s\\n' (?P<end>" + BATCH_END + r"_[0-9a-f]{12}) \$\?\n")
SUBMIT_ID = "codex_submit_{}"  # a submit read back from a text message: Codex keeps no call id for it
_OUTPUT_RE = re.compile(
    r"\AChunk ID: [^\n]*\nWall time: [^\n]*\nProcess exited with code (?P<rc>-?\d+)\n"
    r"(?:Original token count: [^\n]*\n)?Output:\n(?P<out>.*)\Z",
    re.S,
)
_SUBMIT_RE = re.compile(rf"\A(?:(?P<text>.*)\n\n)?{SUBMIT} (?P<args>\{{[^\n]*\}})\Z", re.S)
# Codex's own compaction (0.171.0's prompts, measured): its summary request's user item, and the
# opening of the user item that carries the summary in the context after it.
COMPACTION_OPENING = "You are performing a CONTEXT CHECKPOINT COMPACTION"
SUMMARY_OPENING = "Another language model started to solve this problem"
SUMMARY_LEAD_END = "use the information in this summary to assist with your own analysis:"


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


def compaction_request(text: str) -> str | None:
    """Codex's request for a summary, as ctxbench's (its prompt under the sim's marker line), or None."""
    return f"{COMPACTION_MARKER}\n{text}" if text.lstrip().startswith(COMPACTION_OPENING) else None


def summary_message(text: str) -> str | None:
    """Codex's user item that carries its summary after a compaction, as ctxbench's summary message
    (strategies/_common.py's heading, which the sim reads summaries by), or None."""
    if not text.startswith(SUMMARY_OPENING):
        return None
    summary = text.partition(SUMMARY_LEAD_END)[2].lstrip("\n") or text
    return f"{SUMMARY_MARK} TURNS (Codex compacted them; this summary replaces them)\n\n{summary.rstrip()}"


def _end(commands: list[str]) -> str:
    """A batch's end-of-call marker: named after the batch, so no output it prints holds it."""
    return f"{BATCH_END}_{hashlib.sha256(chr(0).join(commands).encode()).hexdigest()[:12]}"


def batch(commands: list[str]) -> str:
    """Several commands as one, run in order, each in a subshell, each followed by its end line."""
    end = _end(commands)
    return "".join(f"(\n{c}\n)\nprintf '\\n%s %s\\n' {end} $?\n" for c in commands)


def unbatch(cmd: str) -> list[str] | None:
    """The commands of a batch, or None for any other command (read back exactly, or not at all)."""
    m = _BATCH_LINE_RE.search(cmd)
    if not cmd.startswith("(\n") or m is None:
        return None
    pieces = cmd.split(f"\n)\nprintf '\\n%s %s\\n' {m.group('end')} $?\n")
    commands = [p.removeprefix("(\n") for p in pieces[:-1]]
    ok = pieces[-1] == "" and len(commands) > 1 and all(p.startswith("(\n") for p in pieces[:-1])
    return commands if ok and batch(commands) == cmd else None


def unbatch_output(text: str, commands: list[str]) -> list[tuple[int, str]] | None:
    """Each command's (exit code, output) from Codex's rendering of a batch's result; None when it
    does not split into as many (Codex cut the output in its middle, or the batch did not run)."""
    rc, out = output(text)
    if rc is None:
        return None
    parts = re.split(rf"\n{_end(commands)} (-?\d+)\n", out)
    if len(parts) != 2 * len(commands) + 1 or parts[-1] != "":
        return None
    return [(int(parts[2 * k + 1]), parts[2 * k]) for k in range(len(commands))]


class Codex:
    def to_ctxbench(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        out: list[Message] = []
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        batches: dict[str, list[str]] = {}
        for i, m in enumerate(messages):
            if m.role == "assistant" and m.tool_calls:
                own = []
                for c in m.tool_calls:
                    cmd = c.args.get("cmd") if isinstance(c.args, dict) else None
                    commands = unbatch(cmd) if c.name == TOOL and isinstance(cmd, str) else None
                    if commands is not None:
                        batches[c.id] = commands
                        for k, command in enumerate(commands):
                            calls[f"{c.id}.{k}"] = decode(command)
                            own.append(ToolCall(f"{c.id}.{k}", *calls[f"{c.id}.{k}"]))
                        continue
                    name, args = decode(cmd) if c.name == TOOL and isinstance(cmd, str) else (c.name, c.args)
                    calls[c.id] = (name, args)
                    own.append(ToolCall(c.id, name, args))
                out.append(dataclasses.replace(m, tool_calls=tuple(own)))
            elif m.role == "tool" and m.tool_call_id in batches:
                commands = batches[m.tool_call_id]
                each = unbatch_output(m.content, commands)
                for k in range(len(commands)):
                    name, args = calls[f"{m.tool_call_id}.{k}"]
                    text = m.content if each is None else rendered(name, args, *each[k])
                    out.append(
                        dataclasses.replace(m, content=text, tool_call_id=f"{m.tool_call_id}.{k}", name=name)
                    )
            elif m.role == "assistant" and (sub := submitted(m.content)) is not None:
                call = ToolCall(SUBMIT_ID.format(i), "submit_step", sub[1])
                out += [
                    dataclasses.replace(m, content=sub[0], tool_calls=(call,)),
                    Message(role="tool", content=SUBMITTED, tool_call_id=call.id, name=call.name),
                ]
            elif m.role == "tool" and m.tool_call_id in calls:
                name, args = calls[m.tool_call_id]
                out.append(dataclasses.replace(m, content=result(name, args, m.content), name=name))
            elif (
                m.role == "user"
                and (said := compaction_request(m.content) or summary_message(m.content)) is not None
            ):
                out.append(dataclasses.replace(m, content=said))
            else:
                out.append(m)
        return tuple(out)

    def from_ctxbench(self, reply: Completion) -> Completion:
        calls = reply.tool_calls
        if len(calls) == 1 and calls[0].name == "submit_step" and isinstance(calls[0].args, dict):
            return dataclasses.replace(
                reply,
                content=submit_text(reply.content, calls[0].args),
                tool_calls=(),
                stop_reason="end_turn",
            )
        commands = [encode(c.name, c.args if isinstance(c.args, dict) else {}) for c in calls]
        if len(calls) > 1:  # one command, so that Codex runs them in the sim's order
            return dataclasses.replace(
                reply, tool_calls=(ToolCall(calls[0].id, TOOL, {"cmd": batch(commands)}),)
            )
        return dataclasses.replace(
            reply,
            tool_calls=tuple(
                ToolCall(c.id, TOOL, {"cmd": cmd}) for c, cmd in zip(calls, commands, strict=True)
            ),
        )


DIALECT = Codex()
