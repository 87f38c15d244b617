"""Host git, run by the harness against a trial's git dir, with a minimal fixed configuration
(docs/threat_model.md): nothing of the host's or the agent's decides what it does.

* No system or global config, no HOME of the user's (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL
  and HOME point at nothing), and no GIT_* variable of the harness's environment: the
  environment is built here from scratch.
* The repository's own config (written once, by the harness, in a git dir the container
  never sees) turns off hooks, fsmonitor, line-ending conversion, the untracked cache, auto
  gc and auto maintenance (with gc off, every commit still started a `git maintenance run
  --auto` that did nothing: a process per commit), signing, the mailmap (`.mailmap` is read from the tree) and every transport.
* `info/attributes`, which outranks every `.gitattributes` of the tree, unsets every
  attribute that changes what git reads or writes (working-tree-encoding, filters, eol,
  text, ident, diff/merge drivers): a `.gitattributes` of the agent's cannot make `git add`
  fail or run a driver.
* Every call has its own timeout (TIMEOUT_S) and output bound (MAX_OUTPUT_BYTES): a hang or
  a flood on the agent's content ends here, with or without the trial's watchdog, as a
  GitError (the agent's: content.ContentError).
* However a call ends (its timeout, its bound, git's own exit, or the trial's watchdog landing
  anywhere in it, again and again), git and anything it started are killed (their own process
  group) and reaped before `run` returns or raises: no git outlives its call, so none outlives
  its trial (`_end`).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from .content import ContentError

FIXED_DATE = "2000-01-01T00:00:00+0000"
COMMITTER = ("ctxbench", "harness@ctxbench.invalid")  # of every commit, whoever authored it
TIMEOUT_S = 60.0  # one git call on a task repository takes milliseconds
MAX_OUTPUT_BYTES = 256 << 20  # what one git call may print (the final diff of a huge working copy)
# Build artefacts the sandbox produces; they must not change tree shas or file listings.
EXCLUDES = "__pycache__/\n*.pyc\n.pytest_cache/\n/.ctxbench/\n"
CONFIG = (
    "[core]\n\thooksPath = /dev/null\n\tfsmonitor = false\n\tautocrlf = false\n\tuntrackedCache = false\n"
    "\tsymlinks = true\n\tattributesFile = /dev/null\n\tpager = cat\n"
    "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n[commit]\n\tgpgSign = false\n[log]\n\tmailmap = false\n\tshowSignature = false\n"
    "[protocol]\n\tallow = never\n"
)
ATTRIBUTES = (
    "* !text !eol !crlf !working-tree-encoding !filter !diff !merge !ident !export-subst !whitespace\n"
)


class GitError(ContentError):
    """Host git refused (a bad ref, say) or timed out; the message is git's own."""


def init(git_dir: Path, workdir: Path, home: Path) -> None:
    """`git init` of the trial's repository in `git_dir`, its work tree `workdir`."""
    run(git_dir, workdir, home, ("init", "-q", "--initial-branch=main"))


def setup(git_dir: Path) -> None:
    """The harness's own config and rules, right after `git init`."""
    with open(git_dir / "config", "a", encoding="utf-8") as f:  # as `git config` would write it
        f.write(CONFIG)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text(EXCLUDES)
    (git_dir / "info" / "attributes").write_text(ATTRIBUTES)


def commit(git_dir: Path, workdir: Path, home: Path, message: str, name: str, email: str) -> None:
    """`git add -A && git commit`: the harness's commit where libgit.py's may differ from git's."""
    run(git_dir, workdir, home, ("add", "-A"))
    # --allow-empty: every commit call yields a commit, so sha sequences depend only on calls.
    run(
        git_dir,
        workdir,
        home,
        ("commit", "-q", "--allow-empty", "--no-verify", "-m", message),
        env={"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email},
    )


def run(
    git_dir: Path, workdir: Path, home: Path, args: tuple[str, ...], env: Mapping[str, str] | None = None
) -> str:
    full_env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LC_ALL": "C",
        "HOME": str(home),
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(workdir),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_PAGER": "cat",
        "GIT_AUTHOR_DATE": FIXED_DATE,
        "GIT_COMMITTER_DATE": FIXED_DATE,
        "GIT_COMMITTER_NAME": COMMITTER[0],
        "GIT_COMMITTER_EMAIL": COMMITTER[1],
        **(env or {}),
    }
    proc: subprocess.Popen[bytes] | None = None
    try:  # the watchdog may fire as soon as Popen returns: the kill is in the finally from then on
        proc = subprocess.Popen(
            ["git", *args],
            cwd=workdir,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        out, err, why = _bounded(proc)
    finally:
        if proc is not None:
            _end(proc)
    if why:
        raise GitError(f"git {' '.join(args)[:200]} {why}")
    if proc.returncode != 0:
        # The scratch dir's host path is none of the agent's business: named as the container sees it.
        why = _text(err).strip().replace(str(workdir), "/work").replace(str(git_dir), "<git dir>")
        raise GitError(f"git {' '.join(args)} failed ({proc.returncode}): {why}")
    return _text(out)


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill `proc`'s process group unless it has exited, and reap it, whatever is raised
    meanwhile: the trial's watchdog fires every few seconds and may land here too; what it
    raised is raised again once the process is gone (the first of them, if several)."""
    pending: BaseException | None = None
    while True:
        try:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # git's group: it and whatever it started
                except ProcessLookupError:
                    pass
                proc.wait()
            break
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the reap
            pending = pending or exc
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    if pending is not None:
        raise pending


def _bounded(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes, str]:
    """stdout and stderr of `proc` until it exits, or why it was stopped: past TIMEOUT_S, or
    past MAX_OUTPUT_BYTES (the diff of a working copy full of large files)."""
    deadline = time.monotonic() + TIMEOUT_S
    bufs: dict[int, bytearray] = {}
    with selectors.DefaultSelector() as sel:
        for stream in (proc.stdout, proc.stderr):
            assert stream is not None
            sel.register(stream, selectors.EVENT_READ)
            bufs[stream.fileno()] = bytearray()
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return b"", b"", f"did not finish within {TIMEOUT_S:g}s"
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                bufs[key.fd] += chunk
                if len(bufs[key.fd]) > MAX_OUTPUT_BYTES:
                    return b"", b"", f"printed more than {MAX_OUTPUT_BYTES} bytes"
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return b"", b"", f"did not finish within {TIMEOUT_S:g}s"
    assert proc.stdout is not None and proc.stderr is not None
    return bytes(bufs[proc.stdout.fileno()]), bytes(bufs[proc.stderr.fileno()]), ""


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
