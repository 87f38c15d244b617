"""The agent's tools, executed by the harness against the sandbox, with policy enforced here
(docs/threat_model.md). `submit_step` is not here: certifying a step is the loop's job.

Model mistakes are the model's: a call is dispatched only to a tool of the published list
(bench/core/toolspecs.py), after its arguments are validated against that tool's JSON
schema; an unknown name, bad arguments, a refused path, a missing file, a bad git ref, binary
or huge output each come back as a tool result the model sees (`ok=False`, `error` names the
kind for the event log), never as an exception in the harness. By construction: whatever a
handler raises is the call's failure, a tool result (`Tools.call`); only a lost sandbox and
the trial's own end (the watchdog) go through. The git tool passes host git only what
bench/trial/git_tool.py allows.

Policy never depends on the transcript: every path goes through the one canonicaliser, and a
path refused (outside the working copy, `.git`, or a protected file, directly or through a
symlink or a look-alike spelling) is a failed result and a `policy_violation`. After a `run`
command every process it left is ended, and protected files it changed are put back from the
harness's own copy, each one a `policy_violation`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bench.core import emitted
from bench.core.outcomes import TrialFailed
from bench.core.render import file_block
from bench.core.toolspecs import TOOLS, validator
from bench.sandbox.base import GitError, PathRefused, Sandbox, SandboxLost
from bench.sandbox.paths import AbsolutePath
from bench.trial import git_tool
from bench.trial.certify import HarnessCopy, scrub

MAX_GREP_LINES = 200
MAX_LINE_CHARS = 400
MAX_FILE_BYTES = 200_000  # a read_file beyond this is cut, and says so
MAX_GIT_CHARS = 20_000


@dataclass(frozen=True)
class ToolOutcome:
    text: str  # what the model sees
    ok: bool
    policy_violation: str | None = None  # set when the call broke policy (logged by the loop)
    changed: tuple[str, ...] = ()  # paths the call wrote
    error: str | None = None  # the kind of mistake, for a `tool_error` event
    ended: tuple[str, ...] = ()  # processes a `run` left behind, ended (a `process_killed` event)
    exit_code: int | None = (
        None  # a `run` command's exit status (the `exit=` of its text); None if it did not run
    )
    timed_out: bool = False  # a `run` command the harness stopped at its timeout

    def __post_init__(self) -> None:
        # What the model sees is carried once (an undecodable file name, a command's output):
        # the event log, the next request and the pages then hold valid Unicode.
        object.__setattr__(self, "text", emitted.carry(self.text))


def _mistake(kind: str, text: str) -> ToolOutcome:
    return ToolOutcome(f"ERROR: {text}", ok=False, error=kind)


class Tools:
    def __init__(self, sandbox: Sandbox, copy: HarnessCopy, exec_timeout_s: float):
        self.sandbox = sandbox
        self.copy = copy
        self.exec_timeout_s = exec_timeout_s
        self._handlers: dict[str, Callable[..., ToolOutcome]] = {
            "read_file": self.read_file,
            "write_file": self.write_file,
            "edit_file": self.edit_file,
            "delete_file": self.delete_file,
            "list_files": self.list_files,
            "grep": self.grep,
            "run": self.run,
            "git": self.git,
        }

    def call(self, name: object, args: object) -> ToolOutcome:
        handler = self._handlers.get(name) if isinstance(name, str) else None
        if handler is None or not isinstance(name, str):
            return _mistake(
                "unknown_tool", f"unknown tool {name!r}; the tools are: {', '.join(t.name for t in TOOLS)}"
            )
        why = emitted.refusal(args)  # refused where the call entered (bench/core/emitted.py)
        if why is not None:
            return _mistake("bad_arguments", f"{why}; {name} was not run")
        if not isinstance(args, Mapping):
            return _mistake("bad_arguments", f"arguments for {name} must be a JSON object, got {args!r:.200}")
        problem = next(iter(validator(name).iter_errors(dict(args))), None)
        if problem is not None:
            where = "/".join(str(p) for p in problem.absolute_path)
            return _mistake(
                "bad_arguments",
                f"bad arguments for {name}{' at ' + where if where else ''}: {problem.message[:300]}",
            )
        try:
            return handler(**args)
        except (SandboxLost, TrialFailed):  # ours, or the trial's end: not this call's
            raise
        except AbsolutePath as exc:  # refused, but a weak model's slip (`/tmp`), not an attack: a tool_error
            return _mistake("absolute_path", str(exc))
        except PathRefused as exc:  # a policy matter, not a mistake: a violation, not a tool_error
            return ToolOutcome(f"ERROR: {exc}", ok=False, policy_violation=f"{name} {exc}")
        except FileNotFoundError as exc:
            return _mistake("not_found", f"{args.get('path', '')}: no such file ({exc.strerror})")
        except GitError as exc:
            return _mistake("git_error", str(exc)[:2000])
        except Exception as exc:  # the boundary: anything else a call on the agent's files raises
            return _mistake("io_error", f"{type(exc).__name__}: {exc}"[:500])

    @staticmethod
    def submit_refusal(args: object) -> str | None:
        """What the model is told when `submit_step`'s arguments are not what its schema says
        (the loop's `_submit` asks before it certifies anything), or None when they are.
        `args` as the loop receives them: a call's admitted arguments, or anything at all."""
        why = emitted.refusal(args)
        if why is None:
            why = emitted.refusal(emitted.admit_args("submit_step", args))
        return None if why is None else f"ERROR: {why}; the step was not submitted"

    # -- policy ---------------------------------------------------------------------------
    def _writable(self, path: str, action: str) -> str | ToolOutcome:
        """The canonical path, or the refusal (a policy violation) for a write/edit/delete."""
        rel, landed = self.sandbox.resolve(path)
        if landed is None:
            raise PathRefused(f"{path!r} leads outside the working copy through a symlink")
        hit = rel if self.copy.protected(rel) else landed if self.copy.protected(landed) else None
        if hit is None:
            return rel
        via = "" if hit == rel and rel == path else f" (as {path!r})"
        return ToolOutcome(
            f"ERROR: {hit} is protected (read-only by policy){via}; {action} refused",
            ok=False,
            policy_violation=f"{action} {path!r}",
        )

    def _inside(self, operand: str) -> None:
        """PathRefused unless every part of `operand` git may read as a path (git_tool.py,
        `path_readings`) names the working copy or a path in it however spelt (`..`, symlinks):
        host git would otherwise stat host files, or switch `diff` to --no-index by itself and
        open them. A plain revision passes: read as a path it names a file of the copy or none."""
        for path in git_tool.path_readings(operand):
            if path.startswith("/"):
                raise PathRefused(f"argument {operand!r:.80} names an absolute path ({path!r:.80})")
            if all(part in ("", ".") for part in path.split("/")):
                continue  # the working copy's root (or nothing)
            _, landed = self.sandbox.resolve(path)  # PathRefused when it climbs out (canonical)
            if landed is None:
                raise PathRefused(
                    f"argument {operand!r:.80} leads outside the working copy through a symlink"
                )

    # -- the tools ------------------------------------------------------------------------
    def read_file(self, path: str) -> ToolOutcome:
        rel, landed = self.sandbox.resolve(path)
        if landed is None:
            raise PathRefused(f"{path!r} leads outside the working copy through a symlink")
        data = self.sandbox.read_bytes(rel, MAX_FILE_BYTES)
        if b"\0" in data[:8192]:
            return _mistake("binary_output", f"{rel} is a binary file; not shown")
        text = data[:MAX_FILE_BYTES].decode("utf-8", errors="replace")
        if len(data) > MAX_FILE_BYTES:
            return ToolOutcome(
                file_block(rel, text) + f"\n[ctxbench: {rel} is longer than {MAX_FILE_BYTES} bytes; "
                "only its start is shown]",
                ok=True,
                error="output_capped",
            )
        return ToolOutcome(file_block(rel, text), ok=True)

    def write_file(self, path: str, content: str) -> ToolOutcome:
        rel = self._writable(path, "write")
        if isinstance(rel, ToolOutcome):
            return rel
        self.sandbox.write_file(rel, content)
        return ToolOutcome(f"wrote {rel}\n{file_block(rel, content)}", ok=True, changed=(rel,))

    def edit_file(self, path: str, search: str, replace: str) -> ToolOutcome:
        rel = self._writable(path, "edit")
        if isinstance(rel, ToolOutcome):
            return rel
        current = self.sandbox.read_file(rel)
        count = current.count(search) if search else 0
        if count != 1:
            why = "not found" if count == 0 else f"found {count} times"
            return ToolOutcome(f"ERROR: search text {why} in {rel}; re-read the file and retry", ok=False)
        new = current.replace(search, replace, 1)
        self.sandbox.write_file(rel, new)
        return ToolOutcome(f"edited {rel}\n{file_block(rel, new)}", ok=True, changed=(rel,))

    def delete_file(self, path: str) -> ToolOutcome:
        rel = self._writable(path, "delete")
        if isinstance(rel, ToolOutcome):
            return rel
        self.sandbox.delete_file(rel)
        return ToolOutcome(f"deleted {rel}", ok=True, changed=(rel,))

    def list_files(self, glob: str = "") -> ToolOutcome:
        files = [f for f in self.sandbox.list_files() if not glob or fnmatch.fnmatch(f, glob)]
        return ToolOutcome("\n".join(files) or "(no files)", ok=True)

    def grep(self, pattern: str, glob: str = "") -> ToolOutcome:
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            return _mistake("bad_arguments", f"bad regular expression: {exc}")
        hits: list[str] = []
        for f in self.sandbox.list_files():
            if glob and not fnmatch.fnmatch(f, glob):
                continue
            try:
                data = self.sandbox.read_bytes(f, MAX_FILE_BYTES)
            except (ValueError, OSError):
                continue
            if b"\0" in data[:8192]:
                continue
            text = data.decode("utf-8", errors="replace")
            hits += [
                f"{f}:{n}:{line[:MAX_LINE_CHARS]}"
                for n, line in enumerate(text.splitlines(), 1)
                if rx.search(line)
            ]
        more = f"\n... {len(hits) - MAX_GREP_LINES} more matches" if len(hits) > MAX_GREP_LINES else ""
        return ToolOutcome("\n".join(hits[:MAX_GREP_LINES]) + more or "(no matches)", ok=True)

    def run(self, command: str, timeout_s: float | None = None) -> ToolOutcome:
        if timeout_s is not None and not timeout_s > 0:
            return _mistake("bad_arguments", f"timeout_s must be > 0, got {timeout_s!r}")
        size = len(command.encode("utf-8", "surrogatepass"))
        if size >= emitted.MAX_ARG_STRLEN:  # execve would refuse it (E2BIG): say so, not `exit=1`
            return _mistake(
                "bad_arguments",
                f"the command is {size} bytes; Linux passes at most "
                f"{emitted.MAX_ARG_STRLEN - 1} bytes as one argument (MAX_ARG_STRLEN): write "
                "it to a script with write_file and run the script",
            )
        timeout = min(float(timeout_s or self.exec_timeout_s), self.exec_timeout_s)
        res = self.sandbox.exec(command, timeout=timeout, reap=True)
        head = f"exit={res.exit_code}" + (f" (timed out after {timeout:g}s)" if res.timed_out else "")
        if res.ended:
            head += (
                f"\nNOTE: the command left {len(res.ended)} process(es) running; the harness ended them "
                f"(background processes do not outlive a command): {', '.join(res.ended[:10])}"
            )
        restored = self.sandbox.restore(self.copy.files, self.copy.protected)
        violation = ", ".join(restored) or None
        if violation:
            head += f"\nPOLICY: the command changed protected files, restored: {violation}"
        return ToolOutcome(
            f"{head}\n{scrub(res.output)}",
            ok=res.exit_code == 0 and not res.timed_out,
            policy_violation=violation,
            ended=res.ended,
            exit_code=res.exit_code,
            timed_out=res.timed_out,
        )

    def git(self, subcommand: str, args: list[str] | None = None) -> ToolOutcome:
        extra = list(args or [])
        refused = git_tool.refusal(subcommand, extra)
        if refused is not None:
            return _mistake("bad_arguments", refused)
        for operand in git_tool.operands(subcommand, extra):
            self._inside(operand)
        out = self.sandbox.git(subcommand, *extra)
        if "\0" in out[:8192]:
            return _mistake("binary_output", f"git {subcommand} printed binary data; not shown")
        if len(out) > MAX_GIT_CHARS:
            return ToolOutcome(
                out[:MAX_GIT_CHARS] + f"\n[ctxbench: output cut at {MAX_GIT_CHARS} of {len(out)} "
                "characters; narrow the command]",
                ok=True,
                error="output_capped",
            )
        return ToolOutcome(out or "(no output)", ok=True)
