"""mini-swe-agent's dialect: one tool, `bash {command}`, results rendered by its observation
template (mini.yaml's `{"returncode": N, "output": ...}`, or the default XML-like one), and the end of a task the command
whose output begins `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`.

Each ctxbench call is one command of a fixed form, and each form reads back to the call exactly
(shlex quoting; a here-document whose delimiter is not a line of the content):

    read_file   cat -- PATH
    write_file  cat > PATH <<'CTXBENCH_EOF'\\n...CTXBENCH_EOF       (head -c -1 when the content has no final newline)
    edit_file   python3 -c EDIT PATH SEARCH REPLACE                 (replaces exactly one occurrence, prints the file)
    delete_file rm -- PATH
    list_files  find . -type f ... | sort                            (fnmatch GLOB in the same python program)
    grep        python3 -c GREP PATTERN GLOB
    git         git SUBCOMMAND ARGS...
    submit_step printf '%s\\n' COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT JSON(args)
    run         the command itself (and any command not of these forms)

A result is turned back into what ctxbench's tool returns (bench/trial/tools.py): a read's output
in a file block, a write's and an edit's as `wrote`/`edited` + the file block, a failure as `ERROR: ...`.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from typing import Any

from bench.core.render import file_block
from bench.core.types import Completion, Message, ToolCall

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
SUBMITTED = "[submitted: the harness certifies the step]"
TAG = "CTXBENCH_EOF"
EDIT = (
    "import sys,pathlib\n"
    "p,s,r=sys.argv[1:4];f=pathlib.Path(p);t=f.read_text();n=t.count(s) if s else 0\n"
    'if n!=1:print(f\'ERROR: search text {"not found" if n==0 else f"found {n} times"} in {p}; '
    "re-read the file and retry');sys.exit(1)\n"
    "t=t.replace(s,r,1);f.write_text(t);sys.stdout.write(t)"
)
LIST = (
    "import fnmatch,os,sys\n"
    "g=sys.argv[1] if len(sys.argv)>1 else ''\n"
    "fs=sorted(os.path.relpath(os.path.join(d,n)) for d,ds,ns in os.walk('.') for n in ns)\n"
    "fs=[f for f in fs if not g or fnmatch.fnmatch(f,g)];print('\\n'.join(fs) or '(no files)')"
)
GREP = (
    "import fnmatch,os,re,sys\n"
    "x=re.compile(sys.argv[1]);g=sys.argv[2] if len(sys.argv)>2 else '';h=[]\n"
    "for f in sorted(os.path.relpath(os.path.join(d,n)) for d,ds,ns in os.walk('.') for n in ns):\n"
    " if g and not fnmatch.fnmatch(f,g):continue\n"
    " try:t=open(f,encoding='utf-8').read()\n"
    " except (UnicodeDecodeError,OSError):continue\n"
    " h+=[f'{f}:{i}:{l[:300]}' for i,l in enumerate(t.splitlines(),1) if x.search(l)]\n"
    "print('\\n'.join(h[:200]) or '(no matches)')"
)
# the path as shlex.quote writes it: bare safe characters, or '...' pieces joined by "'" for a quote
_HEREDOC_RE = re.compile(
    r"\A(?P<cmd>cat|head -c -1) > (?P<path>(?:'[^']*'|\"'\"|[^\s'\"])+) "
    r"<<'(?P<tag>CTXBENCH_EOF\d*)'\n(?P<body>.*)"
    r"\n(?P=tag)\Z",
    re.S,
)
_OBS_RE = re.compile(r"<returncode>(?P<rc>-?\d+)</returncode>\n(?:<output>\n(?P<out>.*)</output>)?", re.S)


def _q(s: str) -> str:
    return shlex.quote(s)


def encode(name: str, args: dict[str, Any]) -> str:
    """The bash command for one ctxbench call."""
    a = {k: v for k, v in args.items() if v is not None}
    if name == "read_file":
        return f"cat -- {_q(str(a.get('path', '')))}"
    if name == "write_file":
        content, tag = str(a.get("content", "")), TAG
        n = 0
        while tag in content.split("\n"):
            n += 1
            tag = f"{TAG}{n}"
        if content.endswith("\n"):
            return f"cat > {_q(str(a.get('path', '')))} <<'{tag}'\n{content}{tag}"
        return f"head -c -1 > {_q(str(a.get('path', '')))} <<'{tag}'\n{content}\n{tag}"
    if name == "edit_file":
        return " ".join(
            ["python3", "-c", _q(EDIT), *(_q(str(a.get(k, ""))) for k in ("path", "search", "replace"))]
        )
    if name == "delete_file":
        return f"rm -- {_q(str(a.get('path', '')))}"
    if name == "list_files":
        return " ".join(["python3", "-c", _q(LIST), *([_q(str(a["glob"]))] if a.get("glob") else [])])
    if name == "grep":
        return " ".join(
            [
                "python3",
                "-c",
                _q(GREP),
                _q(str(a.get("pattern", ""))),
                *([_q(str(a["glob"]))] if a.get("glob") else []),
            ]
        )
    if name == "git":
        return " ".join(["git", _q(str(a.get("subcommand", ""))), *(_q(str(x)) for x in a.get("args") or [])])
    if name == "submit_step":
        return f"printf '%s\\n' {SUBMIT} {_q(json.dumps(a, ensure_ascii=False, sort_keys=True))}"
    return str(a.get("command", ""))  # run (and anything else: the sim offers only ctxbench's tools)


def decode(command: str) -> tuple[str, dict[str, Any]]:
    """The ctxbench call a command of one of the forms stands for; any other command is `run`."""
    m = _HEREDOC_RE.match(command)
    if m:
        try:
            (path,) = shlex.split(m.group("path"))
        except ValueError:
            return "run", {"command": command}
        body = m.group("body")
        content = body if m.group("cmd") == "head -c -1" else body + "\n"
        return "write_file", {"path": path, "content": content}
    try:
        argv = shlex.split(command)
    except ValueError:
        return "run", {"command": command}
    if len(argv) == 3 and argv[:2] == ["cat", "--"]:
        return "read_file", {"path": argv[2]}
    if len(argv) == 3 and argv[:2] == ["rm", "--"]:
        return "delete_file", {"path": argv[2]}
    if len(argv) == 6 and argv[:3] == ["python3", "-c", EDIT]:
        return "edit_file", {"path": argv[3], "search": argv[4], "replace": argv[5]}
    if len(argv) in (3, 4) and argv[:3] == ["python3", "-c", LIST]:
        return "list_files", ({"glob": argv[3]} if len(argv) == 4 else {})
    if len(argv) in (4, 5) and argv[:3] == ["python3", "-c", GREP]:
        return "grep", {"pattern": argv[3], **({"glob": argv[4]} if len(argv) == 5 else {})}
    if (
        len(argv) >= 2
        and argv[0] == "git"
        and encode("git", {"subcommand": argv[1], "args": argv[2:]}) == command
    ):
        return "git", {"subcommand": argv[1], "args": argv[2:]}
    if len(argv) == 4 and argv[:3] == ["printf", "%s\\n", SUBMIT]:
        try:
            args = json.loads(argv[3])
        except ValueError:
            args = None
        if isinstance(args, dict):
            return "submit_step", args
    return "run", {"command": command}


def observation(text: str) -> tuple[int | None, str]:
    """(return code, output) of mini's rendered observation, in either of its templates (mini.yaml's
    JSON, the default XML-like one); (None, text) for any other text. An output mini elided reads
    as its head and tail with the elision marked, as the model saw it."""
    try:
        d = json.loads(text)
    except ValueError:
        d = None
    if isinstance(d, dict) and isinstance(d.get("returncode"), int):
        out = d.get("output")
        if not isinstance(out, str):
            out = f"{d.get('output_head', '')}\n[{d.get('elided_chars', '?')} characters elided]\n{d.get('output_tail', '')}"
        return int(d["returncode"]), out
    m = _OBS_RE.search(text)
    if not m:
        return None, text
    out = m.group("out")
    return int(m.group("rc")), (out if out is not None else text[m.end() :])


def result(name: str, args: dict[str, Any], text: str) -> str:
    """A command's observation as ctxbench's tool would have returned it."""
    rc, out = observation(text)
    return text if rc is None else rendered(name, args, rc, out)


def rendered(name: str, args: dict[str, Any], rc: int, out: str) -> str:
    """What ctxbench's tool returns for a command of one of the forms that exited `rc` printing
    `out` (every dialect whose tool runs a shell command reads its results back through this)."""
    path = str(args.get("path", ""))
    if name == "run":
        return f"exit={rc}\n{out}"
    if rc != 0:
        return out.removesuffix("\n") if out.startswith("ERROR") else f"ERROR: {out.strip() or f'exit={rc}'}"
    if name == "read_file":
        return file_block(path, out)
    if name == "write_file":  # the command prints nothing; ctxbench's tool shows what it wrote
        return f"wrote {path}\n{file_block(path, str(args.get('content', '')))}"
    if name == "edit_file":
        return f"edited {path}\n{file_block(path, out)}"
    if name == "delete_file":
        return f"deleted {path}"
    if (
        name == "submit_step"
    ):  # the verdict comes as the next instruction (the harness certifies after the turn)
        return SUBMITTED
    return out.removesuffix("\n") if name in ("list_files", "grep") else out


class MiniBash:
    def to_ctxbench(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        out: list[Message] = []
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for m in messages:
            if m.role == "assistant" and m.tool_calls:
                own = []
                for c in m.tool_calls:
                    name, args = (
                        decode(str(c.args.get("command", ""))) if c.name == "bash" else (c.name, c.args)
                    )
                    calls[c.id] = (name, args)
                    own.append(ToolCall(c.id, name, args))
                out.append(dataclasses.replace(m, tool_calls=tuple(own)))
            elif m.role == "tool" and m.tool_call_id in calls:
                name, args = calls[m.tool_call_id]
                out.append(dataclasses.replace(m, content=result(name, args, m.content), name=name))
            else:
                out.append(m)
        return tuple(out)

    def from_ctxbench(self, reply: Completion) -> Completion:
        calls = tuple(
            ToolCall(c.id, "bash", {"command": encode(c.name, c.args if isinstance(c.args, dict) else {})})
            for c in reply.tool_calls
        )
        return dataclasses.replace(reply, tool_calls=calls)


DIALECT = MiniBash()
