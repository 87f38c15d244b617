"""The tree sha computed in-process (bench/accel/gittree.py) is git's, on trees made to trip
it (ignore rules, modes, links, sort order, empty and ignored-only directories), and it hands
over to git whenever it could differ."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from bench.accel import gittree
from bench.sandbox.workcopy import WorkingCopy

BASE = {".gitignore": "__pycache__/\n.pytest_cache/\n", "README.md": "# r\n", "pkg/a.py": "A = 1\n"}


def _git_tree(wc: WorkingCopy) -> str:
    # host git's; the files were written behind the working copy's back, so not its kept tree
    return wc._git_tree()


@pytest.fixture
def wc():
    w = WorkingCopy("gittree", BASE, fast_git=True)
    yield w
    w.close()


def _random_tree(wc: WorkingCopy, rng: random.Random) -> None:
    names = [
        "a",
        "a.b",
        "a0",
        "a-b",
        "b",
        "é",
        "z.pyc",
        "__pycache__",
        ".pytest_cache",
        ".ctxbench",
        "x y",
        "A",
    ]
    for _ in range(rng.randint(3, 25)):
        depth = rng.randint(0, 3)
        parts = [rng.choice(names) for _ in range(depth)] + [rng.choice(names + ["f.py", "g.txt"])]
        path = wc.workdir.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            kind = rng.random()
            if path.exists() or path.is_symlink():
                continue
            if kind < 0.1:
                path.mkdir()  # an empty directory
            elif kind < 0.2:
                os.symlink(rng.choice(["a", "../x", "pkg/a.py", "nowhere"]), path)
            else:
                path.write_bytes(rng.randbytes(rng.randint(0, 40)) if kind < 0.3 else f"{parts}\n".encode())
                if rng.random() < 0.3:
                    path.chmod(0o755)
        except (FileExistsError, NotADirectoryError):
            continue


def test_the_in_process_tree_is_gits(wc):
    rng = random.Random(7)
    for _ in range(40):
        for name in os.listdir(wc.workdir):
            if name not in (".gitignore",):
                p = wc.workdir / name
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        _random_tree(wc, rng)
        ours = gittree.tree_sha(wc.workdir)
        assert ours is not None
        assert ours == _git_tree(wc)


def test_an_empty_or_ignored_only_copy_is_the_empty_tree(wc):
    for name in ("README.md", "pkg/a.py", ".gitignore"):
        (wc.workdir / name).unlink()
    (wc.workdir / "pkg" / "__pycache__").mkdir()
    (wc.workdir / "pkg" / "__pycache__" / "a.pyc").write_bytes(b"x")
    assert gittree.tree_sha(wc.workdir) == _git_tree(wc) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@pytest.mark.parametrize(
    "change",
    [
        lambda w: (w.workdir / ".gitignore").write_text("*.txt\n"),  # a rule of the agent's
        lambda w: (w.workdir / ".gitignore").write_text(" __pycache__/\n"),  # a leading space is a pattern
        lambda w: (w.workdir / "pkg" / ".gitattributes").write_text("* text eol=crlf\n"),
        lambda w: os.mkfifo(w.workdir / "pipe"),
    ],
)
def test_it_hands_over_to_git_when_it_could_differ(wc, change):
    change(wc)
    wc._changes += 1  # as a write of the harness's, or an exec's settling, says
    assert gittree.tree_sha(wc.workdir) is None
    if not (wc.workdir / "pipe").exists():
        ours = wc.tree_sha()
        assert wc._fast._git_trees, "once git decides, it decides for the rest of the sandbox's life"
        assert ours == _git_tree(wc)


def test_a_commits_sha_is_read_from_the_git_dir_and_asked_of_git_when_the_ref_is_packed(wc):
    sha = wc.commit("loose ref", "Agent <a@x.org>")
    assert sha == gittree.head_commit(wc._git_dir) == wc._git("rev-parse", "HEAD").strip()
    wc._git("pack-refs", "--all")  # no loose ref file any more: the reader says so, git answers
    assert gittree.head_commit(wc._git_dir) == ""
    assert wc.commit("packed ref", "Agent <a@x.org>") == wc._git("rev-parse", "HEAD").strip() != sha


def _git_listing(wc: WorkingCopy) -> list[str]:
    return sorted(
        {p for p in wc._git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0") if p}
    )


def test_the_in_process_listing_is_gits(wc):
    # Trees committed now and then, so the index holds paths the working copy has since lost,
    # or turned into directories or links.
    rng = random.Random(11)
    for i in range(40):
        if rng.random() < 0.5:
            wc.commit(f"c{i}", "Agent <a@x.org>")
        for name in os.listdir(wc.workdir):
            if name != ".gitignore" and rng.random() < 0.6:
                p = wc.workdir / name
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        _random_tree(wc, rng)
        (wc.workdir / "bad\udcff.py").write_bytes(b"not utf-8 in its name\n")  # git's bytes, decoded
        ours = gittree.listing(wc.workdir, wc._git_dir)
        assert ours is not None
        assert sorted(set(ours) - {""}) == _git_listing(wc), i


def test_the_listing_is_gits_business_past_the_simple_rules(wc):
    (wc.workdir / "pkg" / ".gitignore").write_text("*.txt\n")
    assert gittree.listing(wc.workdir, wc._git_dir) is None
    (wc.workdir / "pkg" / "n.txt").write_text("x")
    wc._changes += 1
    assert "pkg/n.txt" not in wc.list_files() and wc.list_files() == [
        p for p in _git_listing(wc) if p != "pkg/n.txt"
    ]


def test_list_files_starts_no_git(wc, monkeypatch):
    from bench.sandbox import hostgit

    calls: list[tuple[str, ...]] = []
    real = hostgit.run
    monkeypatch.setattr(
        hostgit, "run", lambda g, w, h, args, env=None: (calls.append(args), real(g, w, h, args, env))[1]
    )
    (wc.workdir / "new.py").write_text("x = 1\n")
    wc._changes += 1
    assert wc.list_files() == [".gitignore", "README.md", "new.py", "pkg/a.py"] and calls == []


def test_a_commit_starts_no_other_git(wc, tmp_path):
    # git runs `git maintenance run --auto` after every commit unless maintenance.auto is off
    # (gc.auto=0 alone leaves it nothing to do, but it is still started): hostgit's config.
    trace = tmp_path / "trace"
    wc._settle()
    wc._git("add", "-A")
    wc._git(
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "traced",
        env={"GIT_TRACE": str(trace), "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x.org"},
    )
    started = [line for line in trace.read_text().splitlines() if "run_command:" in line]
    assert started == [], started


def test_kept_blob_shas_are_used_only_for_files_no_write_has_touched(wc, monkeypatch):
    import time

    from bench.sandbox.content import RACY_NS

    opened: list[str] = []
    real_open = open

    def counting_open(path, *a, **kw):
        opened.append(os.path.relpath(path, wc.workdir))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(gittree, "open", counting_open, raising=False)
    blobs: dict = {}
    first = gittree.tree_sha(wc.workdir, blobs)
    assert first == gittree.tree_sha(wc.workdir) == _git_tree(wc) and opened
    time.sleep(RACY_NS / 1e9 + 0.02)
    gittree.tree_sha(wc.workdir, blobs)  # now older than a clock tick: kept
    del opened[:]
    assert gittree.tree_sha(wc.workdir, blobs) == first
    assert [p for p in opened if not p.endswith(".gitignore")] == []  # (a .gitignore is read for its rules)
    # In place, the same size, its mtime set back: ctime moved, so it is read and the tree is git's.
    target = wc.workdir / sorted(p for p in BASE if not p.endswith(".gitignore"))[0]
    st = os.stat(target)
    data = target.read_bytes()
    target.write_bytes(bytes([data[0] ^ 1]) + data[1:])
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    changed = gittree.tree_sha(wc.workdir, blobs)
    assert changed != first and changed == gittree.tree_sha(wc.workdir) == _git_tree(wc)
    assert os.path.relpath(target, wc.workdir) in opened
