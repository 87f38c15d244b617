"""What the model emits, admitted once where it enters (docs/design.md §8, docs/threat_model.md).

Everything a model sends (a reply's text, each tool call's id, name and arguments) becomes a
`Completion` / `ToolCall` of bench/core/types.py, whose constructors call `admit_call` and
`admit_text` here, whichever provider made them (an HTTP wire decoder, the scripted model, the
sim, a replayed cassette). After that a value is plain: valid Unicode (a lone surrogate, which
has no UTF-8 form, is written as the visible text `\\udc80`), JSON types only, bounded in depth,
size and count, so it round-trips through the event log, the next provider request, MLflow,
the pages and the report, and nothing downstream recurses on it or counts it as a non-string.

What cannot be carried is never an exception: a tool call whose arguments break a bound or
the published schema of its tool is carried with `{REFUSED_KEY: why, "sent": an excerpt}` as
its arguments, which the dispatcher (bench/trial/tools.py) answers with a tool error the model
sees; a reply past its text or call bounds is a `stop_reason="error"` reply, which the loop
fails as `model_error` (the agent's failure, bench/core/outcomes.py).

Pure: imports nothing of the harness but the tool schemas (toolspecs.py, below types.py).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from bench.core.toolspecs import validator

# The bounds, named once. The published schemas (bench/core/toolspecs.py) are at most 3 levels
# deep (an object holding an array of strings) and one tool call writes one file.
MAX_ARG_DEPTH = 16  # nesting of containers in one call's arguments
MAX_ARGS_CHARS = 1 << 20  # characters of every key and string of one call's arguments together
MAX_ARG_NODES = 20_000  # values (containers, strings, numbers) in one call's arguments
MAX_TOOL_NAME_CHARS = 64  # the longest published name is 11
MAX_CALL_ID_CHARS = 256  # providers' ids are ~40 characters
MAX_TOOL_CALLS = 64  # tool calls in one reply
MAX_REPLY_CHARS = 1 << 20  # a reply's text (a max_tokens of 32k tokens is ~130k characters)
MAX_ARG_STRLEN = 32 * 4096  # Linux: one argv string, its NUL included (a `run` command is one)
SENT_EXCERPT_CHARS = 2000  # what a refused call keeps of what was sent, for the model and the log
REFUSED_KEY = "ctxbench_refused"  # the arguments of a call that could not be carried
MAX_REFUSAL_CHARS = 500  # the reason a refused call carries

_SURROGATE = re.compile("[\ud800-\udfff]")


def carry(text: str) -> str:
    """`text` as valid Unicode: each lone surrogate as the visible escape `\\udXXX`. The same
    string when there is none (checked at C speed first)."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def refused(why: str, sent: Any) -> dict[str, str]:
    """The arguments a call is carried with when what it sent cannot be."""
    return {REFUSED_KEY: why, "sent": _excerpt(sent)}


def refusal(args: Any) -> str | None:
    """Why a call's arguments were refused at admission, or None."""
    if isinstance(args, dict) and set(args) == {REFUSED_KEY, "sent"} and isinstance(args[REFUSED_KEY], str):
        return args[REFUSED_KEY]
    return None


def admit_name(name: Any) -> str:
    """A tool name as a bounded string: a number or any other value as its JSON text."""
    if not isinstance(name, str):
        name = _excerpt(name)
    name = carry(name)
    return name if len(name) <= MAX_TOOL_NAME_CHARS else name[:MAX_TOOL_NAME_CHARS] + "..."


def admit_id(call_id: Any) -> str:
    call_id = carry(call_id if isinstance(call_id, str) else _excerpt(call_id))
    return call_id[:MAX_CALL_ID_CHARS]


def admit_args(name: str, args: Any) -> dict[str, Any]:
    """The arguments as carried: plain, bounded and valid for the published tool `name`, or
    `refused(...)`. An unknown tool's arguments are only bounded (the dispatcher names the tool)."""
    why = refusal(args)
    if why is not None:  # admitted before (a call rebuilt from a carried one), or a model sending that shape
        # so carried and bounded again either way
        return refused(carry(why)[:MAX_REFUSAL_CHARS], args["sent"])
    if not isinstance(args, dict):
        return refused(f"arguments for {name} must be a JSON object, got {type(args).__name__}", args)
    plain = _plain(args)
    if isinstance(plain, str):
        return refused(plain, args)
    check = validator(name)
    if check is not None:
        problem = next(iter(check.iter_errors(plain)), None)
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path)
            return refused(
                f"bad arguments for {name}{' at ' + where if where else ''}: {problem.message[:300]}", plain
            )
    return plain


def _plain(args: dict[str, Any]) -> dict[str, Any] | str:
    """A copy of `args` in JSON types with every string carried, or why it breaks a bound.
    Iterative: no nesting can exhaust a stack here."""
    out: dict[str, Any] = {}
    todo: list[tuple[Any, Any, int]] = [(args, out, 1)]  # (source container, its copy, depth)
    chars = nodes = 0
    while todo:
        src, dst, depth = todo.pop()
        if depth > MAX_ARG_DEPTH:
            return f"arguments nested deeper than {MAX_ARG_DEPTH} levels"
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for key, value in items:
            nodes += 1
            if isinstance(key, str):
                chars += len(key)
                key = carry(key)
            elif isinstance(src, dict):
                return f"an argument key is not a string ({type(key).__name__})"
            if isinstance(value, str):
                chars += len(value)
                value = carry(value)
            elif isinstance(value, dict | list | tuple):
                copy: Any = {} if isinstance(value, dict) else []
                todo.append((value, copy, depth + 1))
                value = copy
            elif isinstance(value, float) and not math.isfinite(value):
                return f"an argument is {value!r}, which JSON cannot carry"
            elif not (value is None or isinstance(value, bool | int | float)):
                return f"an argument is a {type(value).__name__}, not a JSON value"
            if chars > MAX_ARGS_CHARS:
                return f"arguments longer than {MAX_ARGS_CHARS} characters (write a large file in parts)"
            if nodes > MAX_ARG_NODES:
                return f"arguments hold more than {MAX_ARG_NODES} values"
            if isinstance(dst, dict):
                dst[key] = value
            else:
                dst.append(value)
    return out


def _excerpt(value: Any) -> str:
    """A short, carried text of any value, whatever its depth or size (never recurses deeply)."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=repr)
        except (ValueError, TypeError, RecursionError):
            text = f"<{type(value).__name__}>"
    text = carry(text)
    return (
        text
        if len(text) <= SENT_EXCERPT_CHARS
        else text[:SENT_EXCERPT_CHARS] + f"... ({len(text)} characters)"
    )


def parse_args(raw: str) -> dict[str, Any] | None:
    """A wire's tool-call argument text as an object, or None when it is not one (malformed:
    the reply is the model's error). Text past the bound or nested past the interpreter's own
    limit is not parsed: it comes back as `refused(...)`, a tool error for the model."""
    if len(raw) > MAX_ARGS_CHARS + 1024:
        return refused(
            f"arguments longer than {MAX_ARGS_CHARS} characters (write a large file in parts)", raw
        )
    try:
        args = json.loads(raw) if raw.strip() else {}
    except RecursionError:
        return refused(f"arguments nested deeper than {MAX_ARG_DEPTH} levels", raw)
    except ValueError:
        return None
    return args if isinstance(args, dict) else None
