"""bench/sandbox/workcopy.py: the working copy's tree is the tree of what its files hold.

Issue 40: on the reference path (host git), `tree_sha` staged the working copy in a copy of the
index written with a fresh mtime. Git trusts an index entry's stat, to the second, unless the
file's mtime is not before the index's own ("racily clean": it rehashes those). The fresh mtime
hid an edit of the same size made in the second of the last commit, so `tree_sha` gave the tree
the files held before. In the grid that was a false `uncertified_tree` (the judge's copy, read
from the files, held the edit); the same blindness would miss code under test that rewrote a
file, same size, in that second. Both directions are attacked here, on both git paths.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from bench.sandbox.workcopy import WorkingCopy
from bench.trial import certified_tree

FILES = {"newsdesk/plugins.py": "TARGET = 'newsdesk.misc:slugify'\n", "README.md": "# t\n"}
EDITED = "TARGET = 'newsdesk.text:slugify'\n"  # the grid's s12 edit: the same size, other bytes


@pytest.fixture(params=[False, True], ids=["host-git", "fast-git"])
def fast_git(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def _content_tree(files: dict[str, str]) -> str:
    return certified_tree.tree_of({p: ("file", c.encode()) for p, c in files.items()})


def _second_start() -> None:
    """Sleep to just after a second begins: what follows within ~0.5 s shares its second."""
    time.sleep(1.02 - time.time() % 1)


def _racy_copies(fast_git: bool, edit: Callable[[WorkingCopy], None]) -> Iterator[WorkingCopy]:
    """A working copy committed and then edited by `edit` (the same size) within one second,
    whose tree is then asked for in a later second; a try that straddled a second is retried."""
    for _ in range(3):
        _second_start()
        wc = WorkingCopy("racy", FILES, fast_git=fast_git)
        try:
            edit(wc)
            edited = os.stat(wc.workdir / "newsdesk/plugins.py").st_mtime
            if int(edited) == int(time.time()) and time.time() % 1 < 0.95:
                _second_start()
                yield wc
                return
        finally:
            wc.close()
    pytest.fail("three tries straddled a second: the machine was too slow for this test")


def _by_the_agents_tool(wc: WorkingCopy) -> None:
    wc.write_file("newsdesk/plugins.py", EDITED)


def _by_a_process(wc: WorkingCopy) -> None:
    """As code under test in the container writes it: in place, through the mount."""
    with open(wc.workdir / "newsdesk/plugins.py", "r+", encoding="utf-8") as f:
        f.write(EDITED)
    wc._ran(reap=True)  # the check's exec: the working copy may have changed


def test_a_same_size_edit_in_the_second_of_the_commit_is_in_the_tree(fast_git: bool) -> None:
    """The agent's edit (the grid's extract_module#1 at s12, then a false `uncertified_tree` on
    the reference path only): the tree is the edited files'."""
    for wc in _racy_copies(fast_git, _by_the_agents_tool):
        assert wc.tree_sha() == _content_tree({**FILES, "newsdesk/plugins.py": EDITED})


def test_code_under_test_rewriting_a_file_in_that_second_is_an_uncertified_tree(fast_git: bool) -> None:
    """The adversary's direction: the judge certified the committed tree, then a process rewrote
    a file (same size, same second). The check's comparison must see it, since the step's commit
    (host git's own index, whose racy entries git rehashes) would record the rewrite."""
    for wc in _racy_copies(fast_git, _by_a_process):
        found = wc.tree_sha()
        assert found != _content_tree(FILES)
        assert found == _content_tree({**FILES, "newsdesk/plugins.py": EDITED})
        assert wc.commit("the step", "agent <a@b.c>") and wc.git("rev-parse", "HEAD^{tree}").strip() == found


def test_the_tree_is_the_one_git_stages_from_an_empty_index(fast_git: bool) -> None:
    for wc in _racy_copies(fast_git, _by_the_agents_tool):
        env = {"GIT_INDEX_FILE": str(wc._root / "index.fresh")}
        wc._git("add", "-A", env=env)
        assert wc.tree_sha() == wc._git("write-tree", env=env).strip()
