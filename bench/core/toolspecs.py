"""The tools the agent has, as schemas every provider can send.

Results the model sees (see bench.trial.tools for the dispatcher):
- read_file: a file block `<file path=".." sha="..">...</file>`
- write_file / edit_file: `wrote|edited PATH` and the new file block; or `ERROR: ...`
- delete_file: `deleted PATH`
- list_files: one path per line
- grep: `path:line:text` lines
- run: `exit=N` then the output (tail-truncated)
- git: the output of `git status|log|diff|show`
- submit_step: `[check:ID passed]` / `[check:ID failed exit=N]` and the check's output
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class ToolSpec:
    """(Also `bench.core.types.ToolSpec`.) Defined here, with no import of types.py, so the
    boundary that checks calls against these schemas (emitted.py) sits below types.py."""

    name: str
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object


def _obj(props: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


_STR = {"type": "string"}

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "read_file",
        "Read a file of the repository (path relative to the repo root).",
        _obj({"path": _STR}, ["path"]),
    ),
    ToolSpec(
        "write_file",
        "Replace a whole file with new content (creates it if missing).",
        _obj({"path": _STR, "content": _STR}, ["path", "content"]),
    ),
    ToolSpec(
        "edit_file",
        "Replace the exact text `search` (must occur exactly once) with `replace`.",
        _obj({"path": _STR, "search": _STR, "replace": _STR}, ["path", "search", "replace"]),
    ),
    ToolSpec("delete_file", "Delete a file.", _obj({"path": _STR}, ["path"])),
    ToolSpec(
        "list_files",
        "List repository files, optionally only those matching a glob.",
        _obj({"glob": _STR}, []),
    ),
    ToolSpec(
        "grep",
        "Search file contents with a regular expression; optional path glob.",
        _obj({"pattern": _STR, "glob": _STR}, ["pattern"]),
    ),
    ToolSpec(
        "run",
        "Run a shell command in the sandbox (no network), in the repo root.",
        _obj({"command": _STR, "timeout_s": {"type": "number"}}, ["command"]),
    ),
    ToolSpec(
        "git",
        "Read-only git: one of status, log, diff, show, with optional extra arguments.",
        _obj(
            {
                "subcommand": {"type": "string", "enum": ["status", "log", "diff", "show"]},
                "args": {"type": "array", "items": _STR},
            },
            ["subcommand"],
        ),
    ),
    ToolSpec(
        "submit_step",
        "Declare the current step done. The harness runs the step's check and "
        "marks it passed or failed. `notes`: what later steps must not undo; `invariants`: new "
        "standing constraints, one sentence each.",
        _obj({"notes": _STR, "invariants": {"type": "array", "items": _STR}}, ["notes"]),
    ),
)


@cache
def validator(name: str) -> Any:
    """The JSON-schema validator of the published tool `name`, or None for a name not published."""
    import jsonschema

    spec = next((t for t in TOOLS if t.name == name), None)
    return None if spec is None else jsonschema.Draft202012Validator(spec.parameters)
