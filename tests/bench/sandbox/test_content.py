"""The boundary around the agent's files (bench/sandbox/content.py, hostgit.py): whatever the
agent leaves in the working copy, every host-side operation on it ends, in bounded time and
memory, either normally or with a ContentError (the agent's failure). Each guard is attacked."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from bench.accel import libgit
from bench.eventlog.writer import EventLog
from bench.sandbox import content, hostgit
from bench.sandbox.content import ContentError, remove_tree, walk
from bench.sandbox.paths import Protected
from bench.sandbox.workcopy import GitError, WorkingCopy
from bench.trial.record import classify
from ctxlog import events as ev
from ctxlog.reader import Log

FILES = {"README.md": "# t\n", "src/app.py": "x = 1\n", "tests/test_app.py": "def test_x():\n    pass\n"}
PROTECTED = Protected(["tests/**"])


@pytest.fixture(params=[False, True], ids=["host-git", "fast-git"])
def wc(request):
    w = WorkingCopy("content", FILES, track=True, fast_git=request.param)  # tracked: its hash is bounded too
    yield w
    try:
        w.close()
    finally:  # GNU rm goes any depth: a broken remove_tree must not leave trees that break pytest's cleanup
        subprocess.run(["rm", "-rf", str(w._root)], check=False)


def _chain(top: str, depth: int, name: str = "d") -> None:
    """`depth` nested directories below `top`, made through dir fds (no path grows)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(fd)


def _ran(wc: WorkingCopy) -> None:
    wc._ran(reap=True)  # what a `run` does to the working copy's bookkeeping


def _git_tree(wc: WorkingCopy) -> str:
    env = {"GIT_INDEX_FILE": str(wc._git_dir / "index.check")}
    wc._git("add", "-A", env=env)
    return wc._git("write-tree", env=env).strip()


def test_a_1200_level_tree_is_the_agents_failure_not_a_recursion_error(wc):
    _chain(str(wc.workdir), 1200)
    _ran(wc)
    for op in (
        lambda: wc.restore(dict(FILES), PROTECTED),
        wc.tree_sha,
        wc.list_files,
        lambda: wc.git("status"),
    ):
        with pytest.raises(ContentError, match="deeper than") as info:
            op()
        assert not isinstance(info.value, RecursionError)
        assert classify(info.value)[0] == "content_error"
    root = wc._root
    wc.close()
    assert not root.exists()  # no ctxbench-sbx-* left behind


def test_a_deep_tree_within_the_bounds_hashes_like_git(wc):
    _chain(str(wc.workdir / "src"), 200)
    os.close(
        os.open(os.path.join(wc.workdir, "src", *["d"] * 200, "leaf.py"), os.O_CREAT | os.O_WRONLY, 0o644)
    )
    _ran(wc)
    assert wc.tree_sha() == _git_tree(wc)


def test_remove_tree_goes_past_path_max_and_mode_000_with_few_fds(tmp_path):
    top = tmp_path / "top"
    top.mkdir()
    _chain(str(top), 1100, name="n" * 100)  # 110,000 characters of path: beyond PATH_MAX
    os.chmod(top / ("n" * 100), 0o000)
    fds = len(os.listdir("/proc/self/fd"))
    try:
        remove_tree(str(top))
        assert not top.exists() and len(os.listdir("/proc/self/fd")) == fds
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=False)


def test_walk_bounds_entries(tmp_path, monkeypatch):
    for i in range(30):
        (tmp_path / f"f{i}").write_text("")
    monkeypatch.setattr(content, "MAX_ENTRIES", 20)
    with pytest.raises(ContentError, match="more than 20 entries"):
        list(walk(str(tmp_path)))


def test_a_1tib_sparse_file_is_never_read_whole(wc):
    with open(wc.workdir / "src" / "big.py", "wb") as f:
        f.truncate(1 << 40)
    _ran(wc)
    start = time.monotonic()
    with pytest.raises(ContentError, match="larger than"):
        wc.read_file("src/big.py")
    assert len(wc.read_bytes("src/big.py", 100)) == 101
    for op in (lambda: wc.restore(dict(FILES), PROTECTED), wc.tree_sha, lambda: wc.commit("x", "a <a@b.c>")):
        with pytest.raises(ContentError, match="larger than"):
            op()
    assert wc.state_sha().startswith("untracked ")  # the check cache never trusts it
    assert time.monotonic() - start < 10


def test_a_fifo_where_host_git_reads_is_removed_first(wc):
    os.mkfifo(wc.workdir / ".gitignore")
    os.mkfifo(wc.workdir / "src" / ".gitattributes")
    _ran(wc)
    start = time.monotonic()
    assert "README.md" in wc.list_files()
    wc.commit("after the fifo", "a <a@b.c>")
    assert wc.git("status", "--short") == "" and time.monotonic() - start < 10
    assert not os.path.lexists(wc.workdir / ".gitignore")


def test_every_host_git_call_has_its_own_timeout(wc, monkeypatch):
    monkeypatch.setattr(WorkingCopy, "_settle", lambda self: None)  # the FIFO guard off: git blocks
    monkeypatch.setattr(hostgit, "TIMEOUT_S", 1.0)
    os.mkfifo(wc.workdir / ".gitignore")
    start = time.monotonic()
    with pytest.raises(GitError, match="did not finish") as info:
        wc.git("status", "--porcelain")
    assert time.monotonic() - start < 5 and classify(info.value)[0] == "content_error"


def test_a_gitattributes_of_the_agents_changes_nothing_host_git_does(wc):
    wc.write_file(
        ".gitattributes",
        "[attr]evil working-tree-encoding=UTF-16 filter=x diff=x\n"
        "* working-tree-encoding=UTF-16\n*.py evil\n*.md -text ident\n",
    )
    wc.write_file("src/app.py", "x = 2  # $Id$\n")
    sha = wc.commit("with attributes", "a <a@b.c>")
    show = wc.git("show", sha, "--", "src/app.py")
    assert "+x = 2  # $Id$" in show and "Binary" not in show
    assert wc.tree_sha() == _git_tree(wc)


def test_host_git_reads_no_config_of_the_hosts_or_the_environment(wc, monkeypatch, tmp_path):
    evil = tmp_path / "gitconfig"
    evil.write_text("[core]\n\tfsmonitor = touch /tmp/ctxbench-gitcfg\n[alias]\n\tstatus = !touch /tmp/x\n")
    for k, v in {
        "GIT_CONFIG_GLOBAL": str(evil),
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.hooksPath",
        "GIT_CONFIG_VALUE_0": str(tmp_path),
        "GIT_DIR": "/",
        "GIT_EXTERNAL_DIFF": "false",
    }.items():
        monkeypatch.setenv(k, v)
    wc.write_file("src/app.py", "x = 3\n")
    assert "+x = 3" in wc.git("diff")
    out = subprocess.run(
        ["git", "config", "--list", "--show-origin"],
        env={
            "GIT_DIR": str(wc._git_dir),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "PATH": os.defpath,
        },
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "hookspath=/dev/null" in out.lower() and "attributesfile=/dev/null" in out.lower()


def test_undecodable_names_and_lone_surrogates_are_carried_losslessly(wc, tmp_path):
    raw = os.path.join(os.fsencode(wc.workdir), b"src", b"bad\xff\xfe.py")
    with open(raw, "wb") as f:
        f.write(b"import sys\nsys._getframe()\n")
    _ran(wc)
    name = os.fsdecode(b"src/bad\xff\xfe.py")  # "src/bad\udcff\udcfe.py"
    assert wc.read_file(name).startswith("import sys")
    assert wc.restore(dict(FILES), PROTECTED) == []
    sha = wc.tree_sha()
    assert sha == _git_tree(wc)
    log = EventLog(tmp_path / "events.jsonl")
    fields = {"name": name, "call_id": "half a pair \ud83d and \udc80", "args": {"k\udcff": ["\udfff"]}}
    log.append(ev.ToolCall(turn=0, **fields))
    log.close()
    read = Log.from_path(tmp_path / "events.jsonl", strict=True)
    [line], [rec] = read.lines, read.records()
    assert line.isascii() is False or "\\udcff" in line
    assert {k: rec[k] for k in fields} == fields
    assert json.loads(line)["name"] == name


def test_any_failure_on_the_agents_files_is_a_content_error(wc, monkeypatch):
    def broken(*a, **k):
        raise KeyError("something no one listed")

    monkeypatch.setattr(hostgit, "run", broken)
    monkeypatch.setattr(libgit.Repo, "commit", broken)  # in process or through host git alike
    with pytest.raises(ContentError) as info:
        wc.commit("x", "a <a@b.c>")
    assert isinstance(info.value, KeyError) and isinstance(info.value.__cause__, KeyError)
    assert classify(info.value) == ("content_error", "KeyError: 'something no one listed'")


def test_host_git_output_is_bounded(wc, monkeypatch):
    wc.write_file("src/app.py", "y = 2\n" * 2000)
    monkeypatch.setattr(hostgit, "MAX_OUTPUT_BYTES", 4096)
    with pytest.raises(GitError, match="printed more than 4096 bytes"):
        wc.git("diff")
    assert wc.git("status", "--porcelain").strip() == "M src/app.py"  # under the bound: unchanged
