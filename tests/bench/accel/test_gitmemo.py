"""Host git's kept answers (bench/accel/gitmemo.py) are git's own: the same words as a fresh
git process on the same history, asked from a second repository that reaches the same
commits; every question whose answer could differ goes to git (refs, pathspecs, dates,
options off the list, a working copy changed since the commit), and so does a kept answer
about an object this repository lacks or a prefix no longer unique in it."""

from __future__ import annotations

import os
import threading

import pytest

from bench.accel import gitmemo
from bench.sandbox import hostgit
from bench.sandbox.workcopy import WorkingCopy

FILES = {
    "pkg/core.py": "def f():\n    return 1\n",
    "README.md": "the task\n",
    "tests/test_core.py": "x = 1\n",
}
AGENT = "Agent Smith <agent@x.org>"


def _history(wc: WorkingCopy) -> None:
    """Three commits: an edit, a new file and a deletion, an outside author's drift."""
    wc.write_file("pkg/core.py", "def f():\n    return 2\n\n\ndef g():\n    return 3\n")
    wc.commit("step s1: return 2 and add g", AGENT)
    wc.write_file("pkg/extra.py", "\n".join(f"line {i}" for i in range(40)) + "\n")
    wc.delete_file("tests/test_core.py")
    wc.commit("step s2: extra module", AGENT)
    wc.write_file("README.md", "the task, renamed\n")
    wc.commit("rename the config key", "Dana Drift <dana@team.invalid>")


@pytest.fixture
def twins(monkeypatch):
    """Two working copies with one history, and the git processes each starts."""
    gitmemo.forget()
    pair = [WorkingCopy("memo-a", FILES, fast_git=True), WorkingCopy("memo-b", FILES, fast_git=True)]
    for wc in pair:
        _history(wc)
    calls: dict[str, list[tuple[str, ...]]] = {"memo-a": [], "memo-b": []}
    real = hostgit.run

    def run(git_dir, workdir, home, args, env=None):
        for wc in pair:
            if git_dir == wc._git_dir:
                calls[wc.trial_id].append(tuple(args))
        return real(git_dir, workdir, home, args, env)

    monkeypatch.setattr(hostgit, "run", run)
    yield pair, calls
    for wc in pair:
        wc.close()
    gitmemo.forget()


def _fresh(wc: WorkingCopy, *args: str) -> str:
    return hostgit.run(wc._git_dir, wc.workdir, wc._root, args)


def _questions(wc: WorkingCopy) -> list[tuple[str, ...]]:
    base = wc.base_commit
    return [
        ("log", "--oneline", f"{base}..HEAD"),
        ("log", "--format=%h %an: %s", f"{base}..HEAD"),
        ("log", "--stat", "-n", "2"),
        ("log", "-n2", "--stat"),
        ("log", "--stat", f"{base}..HEAD"),
        ("diff", "--stat", base),
        ("diff", "--stat", base, "HEAD"),
        ("log", "--oneline"),
    ]


def test_a_kept_answer_is_gits_own_and_starts_no_process(twins):
    (a, b), calls = twins
    for q in _questions(a):
        assert a.git(*q) == _fresh(a, *q)
    assert len(calls["memo-a"]) == len(_questions(a)) * 2 - 1  # the question, and git's answer to compare
    for q in _questions(b):
        assert b.git(*q) == _fresh(b, *q), q
    assert calls["memo-b"] == [q for q in _questions(b)], "each kept answer still started git in b"
    assert a.git("log", "--oneline", f"{a.base_commit}..HEAD").count("\n") == 3


def test_questions_about_more_than_commits_go_to_git_every_time(twins):
    (a, b), calls = twins
    base = a.base_commit
    other = [
        ("log", "--oneline", "main"),
        ("log", "--oneline", f"{base[:12]}..HEAD"),
        ("log", "--oneline", "--", "README.md"),
        ("log", "--oneline", "--all"),
        ("log", "--since=2.weeks", "--oneline"),
        ("log", "--oneline", "--stat"),
        ("log", "--format=%H %s"),
        ("diff", "--stat"),
        ("diff", "--stat", "HEAD~1", "HEAD"),
        ("diff", base, "HEAD"),
        ("show", "--stat", "HEAD"),
        ("log", "--oneline", f"{base}...HEAD"),
        ("log", "--oneline", "-n1", "-n2"),
    ]
    for wc in (a, b):
        for q in other:
            assert wc.git(*q) == _fresh(wc, *q), q
    assert calls["memo-b"][::2] == other, "b's answers were not all git's"


def test_a_working_copy_changed_since_the_commit_is_asked_of_git(twins):
    (a, b), calls = twins
    assert a.git("diff", "--stat", a.base_commit) == b.git("diff", "--stat", b.base_commit)
    b.write_file("pkg/core.py", "changed after the commit\n")
    shown = b.git("diff", "--stat", b.base_commit)
    assert shown == _fresh(b, "diff", "--stat", b.base_commit) != a.git("diff", "--stat", a.base_commit)
    assert ("diff", "--stat", b.base_commit) in calls["memo-b"]
    b.commit("step s3", AGENT)
    b._ran(reap=False)  # a command started in the sandbox and may still run: nothing is clean
    b.git("diff", "--stat", b.base_commit)
    assert calls["memo-b"][-1] == ("diff", "--stat", b.base_commit)


def test_an_object_this_repository_lacks_is_git_s_error(twins):
    (a, b), _ = twins
    a.write_file("only-in-a.txt", "a\n")
    only_a = a.commit("a's own step", AGENT)
    question = ("log", "--oneline", f"{a.base_commit}..{only_a}")
    assert a.git(*question).startswith(only_a[:7])
    with pytest.raises(hostgit.GitError, match="Invalid revision range"):
        b.git(*question)


def test_a_prefix_shared_here_is_git_s_longer_one(twins):
    (a, b), calls = twins
    question = ("log", "--oneline", f"{a.base_commit}..HEAD")
    kept = a.git(*question)
    head = b.git("rev-parse", "HEAD").strip()
    # A loose object whose name starts as HEAD's does: git then prints a longer prefix.
    planted = b._git_dir / "objects" / head[:2] / (head[2:7] + "0" * 33)
    planted.write_bytes(b"")
    shown = b.git(*question)
    assert shown == _fresh(b, *question) != kept
    assert shown.startswith(head[:8]) and calls["memo-b"][0] == question
    gitmemo.forget()
    b.git(*question)  # git's answer with an 8-character prefix is not kept
    assert b.git(*question) == shown and calls["memo-b"].count(question) == 4


def test_a_pack_turns_the_kept_prefixes_off(twins):
    (a, b), calls = twins
    question = ("log", "--format=%h %an: %s", f"{a.base_commit}..HEAD")
    assert a.git(*question) == b.git(*question)
    assert calls["memo-b"] == []
    (b._git_dir / "objects" / "pack" / "pack-0.pack").write_bytes(b"")
    b.git(*question)
    assert calls["memo-b"] == [question]


def test_what_is_kept_is_bounded_and_shared_by_threads(twins, monkeypatch):
    (a, b), _ = twins
    monkeypatch.setattr(gitmemo, "MAX_KEPT_BYTES", 600)
    questions = _questions(a)
    errors: list[BaseException] = []

    def ask(wc: WorkingCopy) -> None:
        try:
            for _ in range(5):
                for q in _questions(wc):
                    assert wc.git(*q) == _fresh(wc, *q)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=ask, args=(wc,)) for wc in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert 0 < gitmemo._kept_bytes <= 600 and sum(map(len, gitmemo._kept.values())) == gitmemo._kept_bytes
    assert len(gitmemo._kept) < len(questions)
    assert os.path.isdir(a._git_dir / "objects")


def test_a_changed_working_copy_is_named_by_its_tree_once_that_is_known(twins):
    (a, b), calls = twins
    question = ("diff", "--stat", "HEAD")
    for wc in (a, b):
        wc.write_file("pkg/core.py", "the step's edit\n")
        wc.write_file("notes.txt", "an untracked file: git diff does not show it\n")
    assert a.git(*question) == b.git(*question) == _fresh(b, *question)
    assert calls["memo-b"].count(question) == 2, "no tree known: b asked git itself"
    assert a.tree_sha() == b.tree_sha()
    a.git(*question)
    del calls["memo-b"][:]
    assert b.git(*question) == _fresh(b, *question) and calls["memo-b"] == [question]  # the kept one
    # A tree that differs only in a file git diff does not show is another question.
    b.write_file("notes.txt", "other words\n")
    b.tree_sha()
    assert b.git(*question) == _fresh(b, *question) and calls["memo-b"].count(question) == 3
    b._ran(reap=True)  # a command ran: the tree known before it names nothing now
    b.git(*question)
    assert calls["memo-b"].count(question) == 4
