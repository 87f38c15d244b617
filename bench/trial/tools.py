"""The agent's tools, executed by the harness against the sandbox, with policy enforced here.

Policy never depends on the transcript: protected paths are refused for write/edit/delete,
and a `run` command that changed a protected file is undone and logged, whatever the
model was told. `submit_step` is not here: certifying a step is the trial loop's job.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench.core.render import file_block
from bench.sandbox.base import Sandbox
from bench.trial.steps import scrub

MAX_GREP_LINES = 200


@dataclass(frozen=True)
class ToolOutcome:
    text: str  # what the model sees
    ok: bool
    policy_violation: str | None = None  # set when the call broke policy (logged by the loop)
    changed: tuple[str, ...] = ()  # paths the call wrote


class Tools:
    def __init__(self, sandbox: Sandbox, protected: tuple[str, ...], exec_timeout_s: float):
        self.sandbox = sandbox
        self.protected = protected
        self.exec_timeout_s = exec_timeout_s
        self._guarded: dict[str, str] = {}
        self.snapshot_protected()

    def is_protected(self, path: str) -> bool:
        return any(fnmatch.fnmatch(path, g) for g in self.protected)

    def snapshot_protected(self) -> None:
        """Remember protected files' contents (again after the harness itself commits drift)."""
        self._guarded = {p: self.sandbox.read_file(p) for p in self.sandbox.list_files() if self.is_protected(p)}

    def call(self, name: str, args: Mapping[str, Any]) -> ToolOutcome:
        handler = getattr(self, f"_{name}", None)
        if handler is None or name == "submit_step":
            return ToolOutcome(f"ERROR: unknown tool {name!r}", ok=False)
        try:
            return handler(**args)
        except TypeError as exc:
            return ToolOutcome(f"ERROR: bad arguments for {name}: {exc}", ok=False)
        except (ValueError, FileNotFoundError, IsADirectoryError, UnicodeDecodeError) as exc:
            return ToolOutcome(f"ERROR: {exc}", ok=False)

    @staticmethod
    def _norm(path: str) -> str:
        path = str(path).strip()
        while path.startswith("./"):
            path = path[2:]
        return path

    def _refuse(self, path: str, action: str) -> ToolOutcome:
        return ToolOutcome(f"ERROR: {path} is protected (read-only by policy); {action} refused",
                           ok=False, policy_violation=f"{action} {path}")

    def _read_file(self, path: str) -> ToolOutcome:
        path = self._norm(path)
        return ToolOutcome(file_block(path, self.sandbox.read_file(path)), ok=True)

    def _write_file(self, path: str, content: str) -> ToolOutcome:
        path = self._norm(path)
        if self.is_protected(path):
            return self._refuse(path, "write")
        self.sandbox.write_file(path, content)
        return ToolOutcome(f"wrote {path}\n{file_block(path, content)}", ok=True, changed=(path,))

    def _edit_file(self, path: str, search: str, replace: str) -> ToolOutcome:
        path = self._norm(path)
        if self.is_protected(path):
            return self._refuse(path, "edit")
        current = self.sandbox.read_file(path)
        count = current.count(search) if search else 0
        if count != 1:
            why = "not found" if count == 0 else f"found {count} times"
            return ToolOutcome(f"ERROR: search text {why} in {path}; re-read the file and retry", ok=False)
        new = current.replace(search, replace, 1)
        self.sandbox.write_file(path, new)
        return ToolOutcome(f"edited {path}\n{file_block(path, new)}", ok=True, changed=(path,))

    def _delete_file(self, path: str) -> ToolOutcome:
        path = self._norm(path)
        if self.is_protected(path):
            return self._refuse(path, "delete")
        self.sandbox.delete_file(path)
        return ToolOutcome(f"deleted {path}", ok=True, changed=(path,))

    def _list_files(self, glob: str = "") -> ToolOutcome:
        files = [f for f in self.sandbox.list_files() if not glob or fnmatch.fnmatch(f, glob)]
        return ToolOutcome("\n".join(files) or "(no files)", ok=True)

    def _grep(self, pattern: str, glob: str = "") -> ToolOutcome:
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            return ToolOutcome(f"ERROR: bad regular expression: {exc}", ok=False)
        hits: list[str] = []
        for f in self.sandbox.list_files():
            if glob and not fnmatch.fnmatch(f, glob):
                continue
            try:
                text = self.sandbox.read_file(f)
            except (UnicodeDecodeError, ValueError):
                continue
            hits += [f"{f}:{n}:{line}" for n, line in enumerate(text.splitlines(), 1) if rx.search(line)]
        more = f"\n... {len(hits) - MAX_GREP_LINES} more matches" if len(hits) > MAX_GREP_LINES else ""
        return ToolOutcome("\n".join(hits[:MAX_GREP_LINES]) + more or "(no matches)", ok=True)

    def _run(self, command: str, timeout_s: float | None = None) -> ToolOutcome:
        timeout = min(float(timeout_s or self.exec_timeout_s), self.exec_timeout_s)
        res = self.sandbox.exec(command, timeout=timeout)
        head = f"exit={res.exit_code}" + (f" (timed out after {timeout:g}s)" if res.timed_out else "")
        violation = self._restore_protected()
        if violation:
            head += f"\nPOLICY: the command changed protected files, restored: {violation}"
        return ToolOutcome(f"{head}\n{scrub(res.output)}", ok=res.exit_code == 0, policy_violation=violation)

    def _restore_protected(self) -> str | None:
        current = set(self.sandbox.list_files())
        changed = []
        for path, content in self._guarded.items():
            try:
                same = path in current and self.sandbox.read_file(path) == content
            except ValueError:  # replaced by a symlink or otherwise unreadable
                same = False
            if not same:
                if path in current:
                    self.sandbox.delete_file(path)
                self.sandbox.write_file(path, content)
                changed.append(path)
        added = [p for p in current if self.is_protected(p) and p not in self._guarded]
        for path in added:
            self.sandbox.delete_file(path)
        return ", ".join(changed + added) or None

    def _git(self, subcommand: str, args: list[str] | None = None) -> ToolOutcome:
        if subcommand not in ("status", "log", "diff", "show"):
            return ToolOutcome("ERROR: git subcommand must be status, log, diff or show", ok=False)
        extra = [str(a) for a in (args or [])]
        if any(a.startswith(("--output", "--ext-diff", "-o")) for a in extra):
            return ToolOutcome("ERROR: that git option is not allowed", ok=False)
        return ToolOutcome(self.sandbox.git(subcommand, *extra) or "(no output)", ok=True)
