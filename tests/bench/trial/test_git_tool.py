"""The git tool passes host git only what bench/trial/git_tool.py allows, and every failure of
a tool on the agent's files is a tool result (the boundary in Tools.call). Attacked here with
the options that reach the host: each is refused before any git process starts."""

from __future__ import annotations

import os
import time

import pytest

from bench.core.outcomes import TrialTimeout
from bench.sandbox.base import GitError, SandboxLost
from bench.trial import git_tool
from bench.trial.certify import HarnessCopy
from bench.trial.tools import Tools
from tests.bench.trial.conftest import tiny_task

HOST_REACH = [
    ["-O/etc/passwd"],
    ["-O", "/etc/passwd"],
    ["--output=/tmp/ctxbench-git-out"],
    ["--output", "/tmp/x"],
    ["--git-dir=/"],
    ["-C", "/"],
    ["--exec-path=/tmp"],
    ["--no-index", "/etc/passwd", "README.md"],
    ["--ext-diff"],
    ["--textconv"],
    ["--upload-pack=sh"],
    ["--orderfile=/etc/passwd"],
    ["--work-tree=/"],
    ["--open-files-in-pager"],
    ["-c", "core.pager=sh"],
    ["--attr-source=HEAD"],
    ["--format=%GS"],
    ["--pretty=format:%G?"],
    ["/etc/passwd"],
    ["--", "/etc/passwd"],
    ["--output-directory=/tmp"],
    ["--ignore-submodules=all", "--submodule=diff"],
    ["--stdin"],
    ["--end-of-options", "-O/x"],
    ["--textconv", "--", "x"],
    ["HEAD\n"],
    ["--grep=\x00"],
]


@pytest.fixture
def tools(box):
    return Tools(box, HarnessCopy(tiny_task()), exec_timeout_s=20)


@pytest.mark.parametrize("args", HOST_REACH, ids=lambda a: " ".join(a)[:40])
def test_options_that_reach_the_host_never_reach_host_git(tools, box, monkeypatch, args):
    called = []
    monkeypatch.setattr(box, "git", lambda *a: called.append(a) or "")
    for sub in git_tool.SUBCOMMANDS:
        out = tools.call("git", {"subcommand": sub, "args": args})
        assert not out.ok and out.error == "bad_arguments", (sub, args, out.text)
    assert called == []


def test_a_fifo_named_by_an_option_blocks_nothing(tools, box, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    out = tools.call("git", {"subcommand": "diff", "args": [f"-O{fifo}", "HEAD"]})
    assert not out.ok and time.monotonic() - start < 5


@pytest.mark.parametrize("sub", git_tool.SUBCOMMANDS)
def test_every_allowed_flag_is_one_host_git_knows(tools, sub):
    """The allow-list is real git: each flag runs (a typo in it would be a refusal by git)."""
    for flag in sorted(git_tool.FLAGS[sub]):
        out = tools.call("git", {"subcommand": sub, "args": [flag]})
        assert out.ok or not any(w in out.text for w in ("unrecognized", "unknown", "usage:")), (
            sub,
            flag,
            out.text,
        )


@pytest.mark.parametrize(
    ("sub", "args"),
    [
        ("log", ["--oneline", "-n3"]),
        ("log", ["-2", "--format=%h %an %s", "--", "tests/test_calc.py"]),
        ("log", ["--since=2000-01-01", "--stat=80,40"]),
        ("diff", ["-U1", "HEAD"]),
        ("diff", ["--cached", "--", "x"]),
        ("show", ["--stat", "HEAD"]),
        ("show", ["HEAD:README.md"]),
        ("status", ["--short", "-uall"]),
        ("diff", ["HEAD", "--", "--weird-but-a-pathspec"]),
    ],
)
def test_ordinary_uses_run(tools, sub, args):
    out = tools.call("git", {"subcommand": sub, "args": args})
    assert out.ok, out.text


def test_whatever_a_tool_raises_is_a_tool_result_by_construction(tools, box, monkeypatch):
    class Unheard(Exception):
        pass

    for exc in (
        RecursionError("deep"),
        MemoryError(),
        Unheard("new"),
        UnicodeEncodeError("utf-8", "\udc80", 0, 1, "x"),
    ):

        def boom(*a, exc=exc, **k):
            raise exc

        monkeypatch.setattr(box, "read_bytes", boom)
        out = tools.call("read_file", {"path": "README.md"})
        assert not out.ok and out.error == "io_error" and type(exc).__name__ in out.text
    for passes in (SandboxLost("gone"), TrialTimeout()):  # ours, and the trial's end: not the call's
        monkeypatch.setattr(box, "read_bytes", lambda *a, e=passes, **k: (_ for _ in ()).throw(e))
        with pytest.raises(type(passes)):
            tools.call("read_file", {"path": "README.md"})


def test_edit_file_on_a_1tib_sparse_file_is_a_tool_error(tools, box):
    with open(box.workdir / "big.py", "wb") as f:
        f.truncate(1 << 40)
    start = time.monotonic()
    out = tools.call("edit_file", {"path": "big.py", "search": "a", "replace": "b"})
    assert not out.ok and out.error == "io_error" and "larger than" in out.text
    assert tools.call("read_file", {"path": "big.py"}).error == "binary_output"
    assert time.monotonic() - start < 5


def test_git_errors_do_not_name_host_paths(tools, box):
    # The tool refuses paths out of the copy before git runs (test_git_paths.py); git's own error
    # for one, which names the work tree, is scrubbed where host git runs (hostgit.py).
    out = tools.call("git", {"subcommand": "show", "args": ["HEAD:../etc/passwd"]})
    assert not out.ok and out.policy_violation
    with pytest.raises(GitError, match="outside repository") as err:
        box.git("show", "HEAD:../etc/passwd")
    assert str(box.workdir) not in str(err.value) and "/work" in str(err.value)


def test_a_count_given_apart_is_the_count_attached():
    # `git log -n 5` is how agents (and the sim's looks at the history) ask; digits name no path.
    assert git_tool.refusal("log", ["--stat", "-n", "5"]) is None
    assert git_tool.refusal("show", ["-n", "1", "HEAD"]) is None
    for refused in (["-n", "/etc/passwd"], ["-n", "-O/etc/passwd"], ["-n"], ["-n", "5x"]):
        assert git_tool.refusal("log", refused) is not None, refused
    assert git_tool.refusal("diff", ["-n", "5"]) and git_tool.refusal("status", ["-n", "5"])  # no count there
