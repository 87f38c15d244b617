"""Host git, run by the harness against a trial's git dir, with a minimal fixed configuration
(docs/threat_model.md): nothing of the host's or the agent's decides what it does.

* No system or global config, no HOME of the user's (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL
  and HOME point at nothing), and no GIT_* variable of the harness's environment: the
  environment is built here from scratch.
* The repository's own config (written once, by the harness, in a git dir the container
  never sees) turns off hooks, fsmonitor, line-ending conversion, the untracked cache, auto
  gc, signing, the mailmap (`.mailmap` is read from the tree) and every transport.
* `info/attributes`, which outranks every `.gitattributes` of the tree, unsets every
  attribute that changes what git reads or writes (working-tree-encoding, filters, eol,
  text, ident, diff/merge drivers): a `.gitattributes` of the agent's cannot make `git add`
  fail or run a driver.
* Every call has its own timeout (TIMEOUT_S): a hang on the agent's content ends here, with
  or without the trial's watchdog, as a GitError (the agent's: content.ContentError).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from .content import ContentError

FIXED_DATE = "2000-01-01T00:00:00+0000"
TIMEOUT_S = 60.0  # one git call on a task repository takes milliseconds
# Build artefacts the sandbox produces; they must not change tree shas or file listings.
EXCLUDES = "__pycache__/\n*.pyc\n.pytest_cache/\n/.ctxbench/\n"
CONFIG = ("[core]\n\thooksPath = /dev/null\n\tfsmonitor = false\n\tautocrlf = false\n\tuntrackedCache = false\n"
          "\tsymlinks = true\n\tattributesFile = /dev/null\n\tpager = cat\n"
          "[gc]\n\tauto = 0\n[commit]\n\tgpgSign = false\n[log]\n\tmailmap = false\n\tshowSignature = false\n"
          "[protocol]\n\tallow = never\n")
ATTRIBUTES = "* !text !eol !crlf !working-tree-encoding !filter !diff !merge !ident !export-subst !whitespace\n"


class GitError(ContentError):
    """Host git refused (a bad ref, say) or timed out; the message is git's own."""


def setup(git_dir: Path) -> None:
    """The harness's own config and rules, right after `git init`."""
    with open(git_dir / "config", "a", encoding="utf-8") as f:  # as `git config` would write it
        f.write(CONFIG)
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "exclude").write_text(EXCLUDES)
    (git_dir / "info" / "attributes").write_text(ATTRIBUTES)


def run(git_dir: Path, workdir: Path, home: Path, args: tuple[str, ...],
        env: Mapping[str, str] | None = None) -> str:
    full_env = {
        "PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "HOME": str(home),
        "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(workdir),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0", "GIT_PAGER": "cat",
        "GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE,
        "GIT_COMMITTER_NAME": "ctxbench", "GIT_COMMITTER_EMAIL": "harness@ctxbench.invalid",
        **(env or {}),
    }
    try:
        proc = subprocess.run(["git", *args], cwd=workdir, env=full_env, capture_output=True,
                              encoding="utf-8", errors="replace", stdin=subprocess.DEVNULL, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args)[:200]} did not finish within {TIMEOUT_S:g}s") from None
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout
