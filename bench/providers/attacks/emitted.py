"""Attacks by what the model emits (issue 42, item 4): values the harness must carry through the
event log, the next provider request, MLflow and the pages, or refuse as the model's own
mistake, never as our failure. The guard is one boundary, bench/core/emitted.py (ToolCall and
Completion admit what a model sends), plus `run`'s MAX_ARG_STRLEN reason (bench/trial/tools.py);
and, for host reach through git (item 5), `Tools._inside` (bench/trial/git_tool.py)."""

from __future__ import annotations

from typing import Any

from bench.providers.attacks.common import SUBMIT, run, write


def nested(depth: int) -> dict[str, Any]:
    """{"a": {"a": ...}} `depth` levels deep, built without recursion."""
    inner: dict[str, Any] = {}
    for _ in range(depth - 1):
        inner = {"a": inner}
    return inner


# Lone surrogates (no UTF-8 form) in every place a model or the agent's files put text.
_SURROGATES = "printf 'x = 1\\n' > \"$(printf 'undecodable\\377\\376.py')\"; echo made"
# A value past the size bound (2 MiB > MAX_ARGS_CHARS): logged once per turn per copy without it.
_LARGE = "x" * (2 << 20)
# A value inside the bound but past the event log's blob threshold (tracking.blob_chars, 256 KiB):
# 1,020,000 characters, which the model may send, once per turn (stored once: ctxlog/blobs.py).
_LARGE_ALLOWED = "x = 1\n" * 170_000
# A command past Linux's MAX_ARG_STRLEN (131,072 bytes for one argv string): execve says E2BIG.
_LONG_COMMAND = "true " + "#" * 200_000

ATTACKS: dict[str, list[list[dict[str, Any]]]] = {
    # arguments nested 600 deep (a RecursionError in the schema check once: harness_error) and
    # 5,000 deep (past json.dumps's own limit; 100,000 deep through a wire was past the JSON
    # parser's: provider_error, tests/bench/core/test_emitted.py).
    "deep_args": [
        [
            {
                "name": "write_file",
                "args": {"path": "calc_deep.py", "content": "x = 1\n", "meta": nested(600)},
            },
            {"name": "read_file", "args": nested(5_000)},
            {"name": "submit_step", "args": {"notes": "done", "invariants": [nested(600)]}},
        ],
        [SUBMIT],
    ],
    # lone surrogates in arguments and names, and a file named by undecodable bytes, listed:
    # every text the next request carries must encode (it once could not: provider_error).
    "surrogates": [
        [
            run(_SURROGATES),
            write("lone\udc80.py", "s = '\ud800'\n"),
            {"name": "list_files", "args": {}},
            {"name": "grep", "args": {"pattern": "\udfff|s = "}},
            {"name": "read_\udc80file", "args": {}},
            {"name": "run", "args": {"command": "ls; echo '\udc80'"}},
        ],
        [SUBMIT],
    ],
    # submit_step with arguments its schema refuses (`"invariants": 5` crashed the recording
    # after the trial: a FAILED run with no metrics), then a tool name that is no name at all.
    "bad_submit": [
        [{"name": "submit_step", "args": {"notes": "done", "invariants": 5}}],
        [{"name": "submit_step", "args": {"notes": 7, "invariants": [1, {"a": 2}]}}],
        [{"name": "submit_step", "args": {"notes": ["a"], "extra": True}}, {"name": "x" * 5000, "args": {}}],
        [SUBMIT],
    ],
    # a 2 MiB argument every turn (40 MB ones made events.jsonl 1.3 GB in 16 turns).
    "huge_args": [
        [write("big.py", _LARGE)],
        [write("big.py", _LARGE)],
        [write("big.py", _LARGE)],
        [SUBMIT],
    ],
    # the largest argument the boundary lets through, sent again every turn: each of its copies
    # (model_call, tool_call, the next context's message, the step's FILES) is one blob.
    "large_args": [
        [write("big.py", _LARGE_ALLOWED)],
        [write("big.py", _LARGE_ALLOWED)],
        [write("big.py", _LARGE_ALLOWED)],
        [write("big.py", _LARGE_ALLOWED)],
        [SUBMIT],
    ],
    # a `run` past MAX_ARG_STRLEN: the model was told `exit=1` and no reason.
    "long_command": [
        [run(_LONG_COMMAND)],
        [SUBMIT],
    ],
    # host reach through git's own path handling: `diff` with a path out of the working copy
    # is --no-index (a host file's existence and content, diffed); pathspec magic and
    # revision syntax name absolute paths; a symlink out of the copy.
    "git_paths": [
        [run("ln -s /etc hostetc; ln -s .. up; echo here > here.txt; echo linked")],
        [
            *(
                {"name": "git", "args": {"subcommand": "diff", "args": a}}
                for a in (
                    ["--", "../../../../../../../../etc/hostname", "here.txt"],  # exists: "they differ"
                    [
                        "--",
                        "../../../../../../../../etc/ctxbench-no-such-file",
                        "here.txt",
                    ],  # "Could not access"
                    ["../../../../../../../../etc/passwd", "here.txt"],
                    ["--stat", "hostetc/hostname", "here.txt"],
                    ["up/up/etc/hostname", "here.txt"],
                    [":(top)/etc/hostname"],
                    [":!/proc/self/root/etc/passwd"],
                    ["HEAD:/etc/passwd"],
                    ["HEAD:../../etc/passwd"],
                    [":(literal)hostetc/passwd"],
                )
            )
        ],
        [SUBMIT],
    ],
}
