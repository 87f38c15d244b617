"""The harness's commits made in process (bench/accel/libgit.py) are git's own, object for
object, on histories made to trip them (deletions, a file turned into a directory and back,
odd names, links, modes, ignored build artefacts); they leave an index host git reads as its
own; the host's user config cannot reach them; and they hand over to host git wherever the
two could write different objects."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.accel import libgit
from bench.config import ROOT
from bench.sandbox import hostgit
from bench.sandbox.content import RACY_NS
from bench.sandbox.workcopy import WorkingCopy
from tests.bench.accel.test_gittree import BASE, _random_tree

AUTHOR = "Agent Smith <agent@x.org>"


class _GitTwin:
    """The same history committed by host git alone, as the harness did before libgit.py."""

    def __init__(self, root: Path, files: dict[str, str]) -> None:
        self.root, self.workdir, self.git_dir = root, root / "work", root / "git"
        self.workdir.mkdir(parents=True)
        hostgit.run(self.git_dir, self.workdir, root, ("init", "-q", "--initial-branch=main"))
        hostgit.setup(self.git_dir)
        for path, text in files.items():
            (self.workdir / path).parent.mkdir(parents=True, exist_ok=True)
            (self.workdir / path).write_text(text)
        self.base = self.commit("initial task files", "ctxbench", "harness@ctxbench.invalid")

    def commit(self, message: str, name: str, email: str) -> str:
        hostgit.commit(self.git_dir, self.workdir, self.root, message, name, email)
        return hostgit.run(self.git_dir, self.workdir, self.root, ("rev-parse", "HEAD")).strip()


def _mirror(src: Path, dst: Path) -> None:
    for name in os.listdir(dst):
        p = dst / name
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    for name in os.listdir(src):
        (
            shutil.copytree(src / name, dst / name, symlinks=True)
            if (src / name).is_dir() and not (src / name).is_symlink()
            else shutil.copy2(src / name, dst / name, follow_symlinks=False)
        )


def _host_git_calls(monkeypatch, wc: WorkingCopy) -> list[tuple[str, ...]]:
    """The host git processes started on `wc`'s repository from now on (the twin's are not)."""
    calls: list[tuple[str, ...]] = []
    real = hostgit.run

    def run(git_dir, workdir, home, args, env=None):
        if git_dir == wc._git_dir:
            calls.append(args)
        return real(git_dir, workdir, home, args, env)

    monkeypatch.setattr(hostgit, "run", run)
    return calls


@pytest.fixture
def pair(tmp_path):
    wc = WorkingCopy("libgit", BASE, fast_git=True)
    twin = _GitTwin(tmp_path / "twin", BASE)
    yield wc, twin
    wc.close()


def test_every_commit_is_the_one_git_writes(pair, monkeypatch):
    wc, twin = pair
    assert wc.base_commit == twin.base, "the initial commit: libgit.init's repository, then libgit's commit"
    spawned = _host_git_calls(monkeypatch, wc)
    rng, in_process = random.Random(5), 0
    for i in range(30):
        for name in os.listdir(wc.workdir):
            if name != ".gitignore" and rng.random() < 0.5:
                p = wc.workdir / name
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        try:
            _random_tree(wc, rng)
        except OSError:  # a path through a link the last round left (a loop, say): a tree all the same
            pass
        if i % 7 == 3:  # a name that is not UTF-8, then gone again
            (wc.workdir / "bad\udcff.py").write_bytes(b"x\n")
        wc._changes += 1
        spawned.clear()
        ours = wc.commit(f"step {i}: change", AUTHOR)
        in_process += spawned == []
        _mirror(wc.workdir, twin.workdir)
        assert ours == twin.commit(f"step {i}: change", "Agent Smith", "agent@x.org"), i
        assert wc._git("status", "--short", "--untracked-files=all") == "", (
            "host git reads libgit2's index as its own: nothing left to stage"
        )
    assert in_process >= 25, f"only {in_process} of 30 commits started no git"


def test_libgit2s_own_ignore_rules_are_never_asked(pair, monkeypatch):
    # For git, `__pycache__/` matches directories only: a symlink of that name is committed.
    # libgit2's `add_all` ignored it; the paths staged are gittree.py's, which are git's.
    wc, twin = pair
    for w in (wc.workdir, twin.workdir):
        os.symlink("pkg", w / "__pycache__")
    wc._changes += 1
    spawned = _host_git_calls(monkeypatch, wc)
    assert wc.commit("a link", AUTHOR) == twin.commit("a link", "Agent Smith", "agent@x.org")
    assert spawned == [] and "__pycache__" in wc._git("ls-files").split()


def test_an_index_changed_behind_its_back_hands_the_commit_to_host_git(pair, monkeypatch, caplog):
    # Host git stages a path the working copy does not hold: libgit2's tree is then not the
    # one gittree.py computes from the walk, nothing is written, and host git commits.
    wc, twin = pair
    (wc.workdir / "stray.py").write_text("s\n")
    wc._git("add", "stray.py")
    (wc.workdir / "stray.py").unlink()
    (wc.workdir / "pkg" / "a.py").write_text("changed\n")
    (twin.workdir / "pkg" / "a.py").write_text("changed\n")
    wc._changes += 1
    spawned = _host_git_calls(monkeypatch, wc)
    with caplog.at_level("INFO", logger="bench.accel.libgit"):
        assert wc.commit("behind", AUTHOR) == twin.commit("behind", "Agent Smith", "agent@x.org")
    assert ("add", "-A") in spawned and "host git commits" in caplog.text
    (wc.workdir / "pkg" / "b.py").write_text("next\n")  # and the next commit is in process again
    (twin.workdir / "pkg" / "b.py").write_text("next\n")
    wc._changes += 1
    spawned.clear()
    assert wc.commit("after", AUTHOR) == twin.commit("after", "Agent Smith", "agent@x.org")
    assert spawned == []


def test_a_rewrite_that_keeps_size_and_mtime_is_staged(pair, monkeypatch):
    # Only ctime, which no process can set, tells this write from none: the index takes it
    # again, in process (were it missed, the tree check would hand the commit to host git).
    wc, twin = pair
    time.sleep(2 * RACY_NS / 1e9)  # the files now stand still: a commit remembers their lstat
    wc._changes += 1
    assert wc.commit("still", AUTHOR) == twin.commit("still", "Agent Smith", "agent@x.org")
    path = wc.workdir / "pkg" / "a.py"
    assert "pkg/a.py" in wc._fast._blobs, "gittree keeps its blob sha: only its lstat key tells the write"
    before = path.stat()
    path.write_text("X" * before.st_size)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    (twin.workdir / "pkg" / "a.py").write_text("X" * before.st_size)
    assert (path.stat().st_size, path.stat().st_ino, path.stat().st_mtime_ns) == (
        before.st_size,
        before.st_ino,
        before.st_mtime_ns,
    )
    wc._changes += 1
    spawned = _host_git_calls(monkeypatch, wc)
    assert wc.commit("same size", AUTHOR) == twin.commit("same size", "Agent Smith", "agent@x.org")
    assert spawned == []


def test_a_file_turned_into_a_directory_and_back(pair):
    wc, twin = pair
    for change in (
        lambda w: (
            (w / "pkg" / "a.py").unlink(),
            (w / "pkg" / "a.py").mkdir(),
            (w / "pkg" / "a.py" / "x").write_text("1"),
        ),
        lambda w: (shutil.rmtree(w / "pkg" / "a.py"), (w / "pkg" / "a.py").write_text("2")),
        lambda w: shutil.rmtree(w / "pkg"),
    ):
        change(wc.workdir)
        change(twin.workdir)
        wc._changes += 1
        assert wc.commit("turn", AUTHOR) == twin.commit("turn", "Agent Smith", "agent@x.org")


@pytest.mark.parametrize(
    "message,author",
    [
        ("two\nlines", AUTHOR),  # git's cleanup of a message libgit.py does not redo
        ("trailing space ", AUTHOR),
        ("fine", "Smith, J. <j@x.org>"),  # git strips the name's trailing '.', libgit2 would not
        ("fine", "J <.j@x.org>"),
    ],
)
def test_words_git_would_rewrite_go_to_host_git(pair, message, author):
    wc, twin = pair
    assert not libgit.writes_as_git(message, *author[:-1].split(" <"))
    assert wc._fast._lib.commit(message, *author[:-1].split(" <")) is None
    name, email = author[:-1].split(" <")
    assert wc.commit(message, author) == twin.commit(message, name, email)


def test_an_agents_attributes_hand_the_commits_to_host_git(pair, monkeypatch):
    wc, twin = pair
    for w in (wc.workdir, twin.workdir):
        # unset by info/attributes for git; libgit2 is not asked
        (w / ".gitattributes").write_text("*.py ident\n")
        (w / "pkg" / "a.py").write_text("$Id$\n")
    wc._changes += 1
    spawned = _host_git_calls(monkeypatch, wc)
    assert wc.commit("attrs", AUTHOR) == twin.commit("attrs", "Agent Smith", "agent@x.org")
    assert ("add", "-A") in spawned and wc._fast._git_trees, "git decides from then on"


_UNDER_A_HOSTILE_HOME = """
import json
from bench.sandbox import hostgit
from bench.sandbox.workcopy import WorkingCopy
calls = []
real = hostgit.run
hostgit.run = lambda g, w, h, a, env=None: (calls.append(a), real(g, w, h, a, env))[1]
wc = WorkingCopy("libgit-home", {"pkg/a.py": "A = 1\\n"}, fast_git=True)
try:
    print(json.dumps({"base": wc.base_commit, "files": wc._git("ls-files").split(),
                      "host_git": [a[0] for a in calls if a[0] != "ls-files"]}))
finally:
    wc.close()
"""


def test_the_hosts_user_config_cannot_change_what_is_staged(tmp_path):
    # The harness started with a HOME whose git config and XDG ignore file (libgit2's global
    # and XDG levels, read when pygit2 is first imported) say to ignore every .py: the
    # harness's commit still stages them, in process, as host git (whose HOME is the
    # sandbox's scratch dir) does.
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "ignore").write_text("*.py\n")
    (home / ".gitconfig").write_text(
        f"[core]\n\texcludesFile = {home}/.config/git/ignore\n[user]\n\tname = Mallory\n"
    )
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    out = subprocess.run(
        [sys.executable, "-c", _UNDER_A_HOSTILE_HOME],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    got = json.loads(out.splitlines()[-1])
    twin = _GitTwin(tmp_path / "twin", {"pkg/a.py": "A = 1\n"})
    assert got["files"] == ["pkg/a.py"] and got["base"] == twin.base
    assert got["host_git"] == [], "committed in process: libgit2 read neither file"


def test_rules_below_a_directory_git_ignores_change_nothing(pair, monkeypatch):
    # What `pytest` in the working copy leaves: `.pytest_cache/.gitignore` saying `*`. Git never
    # reads it (the directory is ignored), so the commits stay in process, and stay git's.
    wc, twin = pair
    for w in (wc.workdir, twin.workdir):
        (w / ".pytest_cache").mkdir()
        (w / ".pytest_cache" / ".gitignore").write_text("# Created by pytest automatically.\n*\n")
        (w / "pkg" / "__pycache__").mkdir()
        (w / "pkg" / "__pycache__" / ".gitattributes").write_text("* ident\n")
        (w / "new.py").write_text("n\n")
    wc._changes += 1
    spawned = _host_git_calls(monkeypatch, wc)
    assert wc.commit("cache", AUTHOR) == twin.commit("cache", "Agent Smith", "agent@x.org")
    assert spawned == [] and not wc._fast._git_trees
    (wc.workdir / "pkg" / ".gitignore").write_text("*.txt\n")  # one git reads: host git from now on
    wc._changes += 1
    wc.commit("rules", AUTHOR)
    assert wc._fast._git_trees and ("add", "-A") in spawned
