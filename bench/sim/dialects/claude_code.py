"""Claude Code's dialect: its `Read`/`Write`/`Edit`/`Bash` tools with absolute paths under the
sandbox's working copy (/work, Claude Code's cwd there), their tool_result texts as Claude Code
2.1.197 renders them (measured: docs/agents.md), and the end of a turn a reply with text and no
tool_use (Claude Code ends its turn there; the harness then certifies).

The sim's calls become Claude Code's, and read back exactly:

    read_file   Read  {file_path: /work/PATH}
    write_file  Write {file_path: /work/PATH, content}
    edit_file   Edit  {file_path: /work/PATH, old_string: SEARCH, new_string: REPLACE}   (one occurrence, as ours)
    submit_step the reply's text, its last line `SUBMIT_STEP <call id> <JSON args>`, and no tool_use
    any other  Bash  {command}, in mini_bash's fixed forms (delete, list, grep, git; run is the command)

Claude Code's results, as ctxbench's tools would have returned them (bench/trial/tools.py):
a Read's numbered lines (`N<TAB>text`, a final newline its own empty numbered line) are the file
block; a Write is `wrote PATH` and the file block of what was written; an Edit is `edited PATH`
and the file after it, from the file as the context last showed it (Claude Code shows nothing
after an edit and refuses an Edit of a file changed since it was shown, so this is the file);
a Read Claude Code answers "unchanged since your last Read" is the file as last shown; a Bash
result is its output, `Exit code N` first when it failed; `<tool_use_error>` is `ERROR:`. The
`<system-reminder>` blocks Claude Code appends to a Read are not the file and are left out of
it. Claude Code's own compaction reads as ctxbench's: its summary request is a compaction request
(its prompt under the sim's marker line), and the message that carries the summary afterwards a
summary message. Anything else (a reminder in a message of its own, a call the sim did not make)
passes as it is.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from bench.core.render import file_block
from bench.core.types import Completion, Message, ToolCall
from bench.sim.dialects import mini_bash
from bench.sim.perception import SUMMARY_MARK
from bench.sim.provider import COMPACTION_MARKER

WORK = "/work"  # the working copy inside the sandbox, Claude Code's cwd (bench/sandbox/docker.py)
SUBMIT = "SUBMIT_STEP"
_SUBMIT_RE = re.compile(rf"(?:\A|\n){SUBMIT} (?P<id>\S+) (?P<args>\{{.*\}})\Z", re.S)
_ERROR_RE = re.compile(r"\A<tool_use_error>(?P<text>.*)</tool_use_error>\Z", re.S)
_EXIT_RE = re.compile(r"\AExit code (?P<rc>-?\d+)(?:\n|\Z)")
_REMINDER_RE = re.compile(r"\n*<system-reminder>.*?</system-reminder>\n*", re.S)
# Claude Code's own compaction (measured): its summary request's last user message, and the user
# message that carries the summary in the requests after it.
COMPACTION_OPENING = "CRITICAL: Respond with TEXT ONLY"
CONTINUED = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation."
)
AFTER_SUMMARY = "\n\nIf you need specific details from before compaction"
_LINE_RE = re.compile(r"\A(?P<n>\d+)(?:\t(?P<text>.*))?\Z", re.S)  # an empty last line may lose its tab
UNCHANGED = (
    "Wasted call — file unchanged since your last Read"  # Claude Code's answer to a Read it thinks needless
)


def _abs(path: str) -> str:
    return f"{WORK}/{path}"


def _rel(path: Any) -> str | None:
    p = str(path)
    return p[len(WORK) + 1 :] if p.startswith(WORK + "/") and len(p) > len(WORK) + 1 else None


def encode(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Claude Code's tool and input for one ctxbench call (submit_step is not a tool: `from_ctxbench`)."""
    a = {k: v for k, v in args.items() if v is not None}
    if name == "read_file":
        return "Read", {"file_path": _abs(str(a.get("path", "")))}
    if name == "write_file":
        return "Write", {"file_path": _abs(str(a.get("path", ""))), "content": str(a.get("content", ""))}
    if name == "edit_file":
        return "Edit", {
            "file_path": _abs(str(a.get("path", ""))),
            "old_string": str(a.get("search", "")),
            "new_string": str(a.get("replace", "")),
        }
    return "Bash", {"command": mini_bash.encode(name, a)}


def decode(tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The ctxbench call a Claude Code tool_use stands for; any other passes as it is. Claude Code
    records an Edit's default `replace_all: false` in its history: that is still our edit."""
    path = _rel(args.get("file_path", ""))
    keys = set(args)
    if tool == "Read" and keys == {"file_path"} and path is not None:
        return "read_file", {"path": path}
    if tool == "Write" and keys == {"file_path", "content"} and path is not None:
        return "write_file", {"path": path, "content": str(args["content"])}
    if (
        tool == "Edit"
        and keys - {"replace_all"} == {"file_path", "old_string", "new_string"}
        and args.get("replace_all") in (None, False)
        and path is not None
    ):
        return "edit_file", {
            "path": path,
            "search": str(args["old_string"]),
            "replace": str(args["new_string"]),
        }
    if (
        tool == "Bash"
        and set(args) <= {"command", "description", "timeout"}
        and isinstance(args.get("command"), str)
    ):
        return mini_bash.decode(args["command"])
    return tool, args


def read_text(content: str) -> str | None:
    """A file's text from Claude Code's numbered Read result, or None if it is not one."""
    body = _REMINDER_RE.sub("", content)
    if not body:  # an empty file: Claude Code shows only its warning
        return "" if "<system-reminder>" in content and "the file exists" in content else None
    lines = body.split("\n")
    out = []
    for i, line in enumerate(lines, 1):
        m = _LINE_RE.match(line)
        if not m or int(m.group("n")) != i:
            return None
        out.append(m.group("text") or "")
    return "\n".join(out)


def result(name: str, args: dict[str, Any], content: str, known: dict[str, str] | None = None) -> str:
    """A Claude Code tool_result as ctxbench's tool would have returned it. `known`: each file's
    text as the context last showed it (Claude Code's own record of what the model has seen: it
    answers a Read of a file it holds unchanged with UNCHANGED, and shows nothing after an Edit),
    kept up to date here call by call."""
    known = {} if known is None else known
    path = str(args.get("path", ""))
    err = _ERROR_RE.match(content.strip())
    if err:
        return f"ERROR: {err.group('text').strip()}"
    if name == "read_file":
        text = known.get(path) if content.startswith(UNCHANGED) else read_text(content)
        if text is None:
            return content
        known[path] = text
        return file_block(path, text)
    if name == "write_file":
        known[path] = str(args.get("content", ""))
        return f"wrote {path}\n{file_block(path, known[path])}"
    if name == "edit_file":
        # A successful Edit replaced the one occurrence in the file as last shown (Claude Code refuses
        # an Edit of a file changed since): the file after it, where the context showed the file before.
        before, search = known.pop(path, None), str(args.get("search", ""))
        if before is None or not search or before.count(search) != 1:
            return f"edited {path}"
        known[path] = before.replace(search, str(args.get("replace", "")), 1)
        return f"edited {path}\n{file_block(path, known[path])}"
    if name == "delete_file":
        known.pop(path, None)
    if name in ("run", "delete_file", "list_files", "grep", "git", "submit_step"):
        m = _EXIT_RE.match(content)
        rc, out = (int(m.group("rc")), content[m.end() :]) if m else (0, content)
        if name == "run":  # ours prints the output with its final newline; Claude Code strips it
            return f"exit={rc}\n{out}" + ("\n" if out and not out.endswith("\n") else "")
        return mini_bash.result(name, args, json.dumps({"returncode": rc, "output": out}))
    return content


def submission(text: str) -> tuple[str, str, dict[str, Any]] | None:
    """(text before it, call id, args) of a reply's SUBMIT_STEP line, or None."""
    m = _SUBMIT_RE.search(text)
    if not m:
        return None
    try:
        args = json.loads(m.group("args"))
    except ValueError:
        return None
    return (text[: m.start()], m.group("id"), args) if isinstance(args, dict) else None


def compaction_request(text: str) -> str | None:
    """Claude Code's request for a summary, as ctxbench's (its prompt, under the marker line the
    sim answers with a summary), or None."""
    return f"{COMPACTION_MARKER}\n{text}" if text.lstrip().startswith(COMPACTION_OPENING) else None


def continuation(text: str) -> str | None:
    """Claude Code's message that carries its summary after a compaction, as ctxbench's summary
    message (strategies/_common.py's heading, which the sim reads summaries by), or None."""
    if not text.startswith(CONTINUED):
        return None
    body = text[len(CONTINUED) :].lstrip("\n")
    summary, sep, rest = body.partition(AFTER_SUMMARY)
    return (
        f"{SUMMARY_MARK} TURNS (Claude Code compacted them; this summary replaces them)\n\n{summary.rstrip()}"
        + (f"\n\n{sep.lstrip()}{rest}" if sep else "")
    )


class ClaudeCode:
    def to_ctxbench(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        out: list[Message] = []
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        known: dict[str, str] = {}  # path -> its text as the context last showed it
        for m in messages:
            if m.role == "assistant" and m.tool_calls:
                own = []
                for c in m.tool_calls:
                    name, args = decode(c.name, c.args)
                    calls[c.id] = (name, args)
                    own.append(ToolCall(c.id, name, args))
                out.append(dataclasses.replace(m, tool_calls=tuple(own)))
            elif m.role == "assistant" and (sub := submission(m.content)) is not None:
                before, call_id, args = sub
                out.append(
                    dataclasses.replace(
                        m, content=before, tool_calls=(ToolCall(call_id, "submit_step", args),)
                    )
                )
                out.append(
                    Message(
                        role="tool", content=mini_bash.SUBMITTED, tool_call_id=call_id, name="submit_step"
                    )
                )
            elif m.role == "tool" and m.tool_call_id in calls:
                name, args = calls[m.tool_call_id]
                out.append(dataclasses.replace(m, content=result(name, args, m.content, known), name=name))
            elif (
                m.role == "user"
                and (said := compaction_request(m.content) or continuation(m.content)) is not None
            ):
                out.append(dataclasses.replace(m, content=said))
            else:
                out.append(m)
        return tuple(out)

    def from_ctxbench(self, reply: Completion) -> Completion:
        submits = [c for c in reply.tool_calls if c.name == "submit_step"]
        others = [c for c in reply.tool_calls if c.name != "submit_step"]
        if (
            submits and not others
        ):  # a reply with no tool_use ends Claude Code's turn: the hand-off is its text
            c = submits[0]
            line = f"{SUBMIT} {c.id} {json.dumps(c.args if isinstance(c.args, dict) else {}, ensure_ascii=False, sort_keys=True)}"
            text = f"{reply.content}\n{line}" if reply.content else line
            return dataclasses.replace(reply, content=text, tool_calls=(), stop_reason="end_turn")
        # With other calls in the same reply Claude Code would go on after them: the submission is left
        # for a later reply (the sim decides again on what the calls return).
        calls = tuple(
            ToolCall(c.id, *encode(c.name, c.args if isinstance(c.args, dict) else {})) for c in others
        )
        return dataclasses.replace(reply, tool_calls=calls)


DIALECT = ClaudeCode()
