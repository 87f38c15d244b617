"""Where a sandbox's git dir lives (bench/accel/scratch.py), and what an agent can make it
hold: in memory only while there is room and few enough of the process's sandboxes hold one
there, never in a dir someone else made, gone with the sandbox; and a trial whose files grow
past content.MAX_GROWTH_BYTES is the agent's ContentError before host git keeps them."""

from __future__ import annotations

import os

import pytest

from bench.accel import scratch
from bench.sandbox import content, engine, workcopy
from bench.sandbox.content import ContentError
from bench.sandbox.workcopy import WorkingCopy

FILES = {"pkg/a.py": "x = 1\n", "README.md": "task\n"}


@pytest.fixture
def memory(tmp_path, monkeypatch):
    """A stand-in for /dev/shm: a dir of the test's, taken for a tmpfs with room."""
    fs = tmp_path / "shm"
    fs.mkdir()
    monkeypatch.setattr(scratch, "MEMORY_FS", fs)
    monkeypatch.setattr(scratch, "_memory_fs_is_tmpfs", lambda: True)
    return fs


def test_the_git_dir_is_in_memory_and_goes_with_the_sandbox(memory):
    with WorkingCopy("s1", FILES, fast_git=True) as wc:
        assert wc._git_dir.parent == memory / f"{wc._root.name}-git"
        assert os.stat(wc._git_dir.parent).st_mode & 0o777 == 0o700
        assert not (wc._root / "git").exists() and wc.git("log", "--oneline").count("\n") == 1
    assert os.listdir(memory) == [] and scratch._in_memory == set()


def test_past_its_share_or_its_room_or_a_name_taken_the_git_dir_stays_on_disk(memory, monkeypatch):
    monkeypatch.setattr(scratch, "IN_MEMORY_PER_PROCESS", 1)
    first, second = WorkingCopy("a", FILES, fast_git=True), WorkingCopy("b", FILES, fast_git=True)
    try:
        assert first._git_dir.parent.parent == memory and second._git_dir == second._root / "git"
    finally:
        first.close()
        second.close()
    monkeypatch.setattr(scratch, "MIN_FREE_BYTES", 1 << 62)
    with WorkingCopy("c", FILES, fast_git=True) as wc:
        assert wc._git_dir == wc._root / "git"
    monkeypatch.setattr(scratch, "MIN_FREE_BYTES", 0)
    real = workcopy.tempfile.mkdtemp
    taken = {}

    def mkdtemp(prefix: str = "") -> str:  # someone made the git dir's name first (world-writable /dev/shm)
        path = real(prefix=prefix)
        taken["dir"] = memory / f"{os.path.basename(path)}-git"
        taken["dir"].mkdir()
        return path

    monkeypatch.setattr(workcopy.tempfile, "mkdtemp", mkdtemp)
    with WorkingCopy("d", FILES, fast_git=True) as wc:
        assert wc._git_dir == wc._root / "git" and os.listdir(taken["dir"]) == []
    assert taken["dir"].exists(), "a dir the sandbox did not make is not removed"
    assert engine.leaked_git_root("/tmp/ctxbench-sbx-x1", str(memory)) == str(memory / "ctxbench-sbx-x1-git")


def test_files_grown_past_what_a_trials_history_may_take_are_the_agents(monkeypatch):
    monkeypatch.setattr(workcopy, "MAX_GROWTH_BYTES", 10_000)
    with WorkingCopy("g", FILES, fast_git=True) as wc:
        wc.write_file("data.bin", "x" * 6_000)
        wc.commit("one large file", "A <a@b.c>")
        for _ in range(3):  # unchanged, it is not counted again
            wc.write_file("pkg/a.py", "x = 2\n")
            wc.commit("a small edit", "A <a@b.c>")
        wc.write_file("data.bin", "y" * 6_000)  # the same size, new content: grown again
        with pytest.raises(ContentError, match="grew by more than 10000 bytes"):
            wc.commit("rewritten", "A <a@b.c>")
    with WorkingCopy(
        "h", FILES, fast_git=True
    ) as wc:  # written behind the harness's back, as a container would
        (wc.workdir / "junk").write_bytes(b"z" * 20_000)
        wc._ran(reap=True)
        with pytest.raises(ContentError):
            wc.git("status", "--short")
    assert content.MAX_GROWTH_BYTES * scratch.IN_MEMORY_PER_PROCESS <= 2 << 30  # the bound scratch.py states
