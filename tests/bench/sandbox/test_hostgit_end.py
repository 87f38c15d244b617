"""No host git outlives its call, whatever the trial's watchdog was doing (issue 42, item 5).

A slow `git diff --minimal` across the watchdog: the watchdog's exception lands inside the
call, and fires again every `repeat_s` while the harness cleans up. Stood in for by a `git` on
PATH that starts a child and sleeps (the harness's own environment keeps PATH). The call must
end with the watchdog's exception and no process of it left: git and its child killed (their
own process group) and reaped (no zombie)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from bench.core.outcomes import TrialTimeout
from bench.sandbox import hostgit
from bench.trial.watchdog import Watchdog

SLOW_GIT = """#!/bin/sh
sleep 300 &
echo "$$ $!" > "{pids}"
exec sleep 300
"""


@pytest.fixture
def slow_git(tmp_path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pids = tmp_path / "pids"
    git = bin_dir / "git"
    git.write_text(SLOW_GIT.format(pids=pids))
    git.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', os.defpath)}")
    return pids


def _started(pids: Path) -> list[int]:
    for _ in range(200):
        if pids.exists() and len(pids.read_text().split()) == 2:
            return [int(p) for p in pids.read_text().split()]
        time.sleep(0.01)
    raise AssertionError("the stand-in git never started")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _call_across_the_watchdog(tmp_path: Path) -> None:
    with pytest.raises(TrialTimeout), Watchdog(0.3, TrialTimeout, repeat_s=0.05):
        hostgit.run(tmp_path, tmp_path, tmp_path, ("diff", "--minimal"))


def test_a_git_call_across_the_watchdog_leaves_no_process(slow_git, tmp_path):
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    _call_across_the_watchdog(tmp_path)
    git, child = _started(slow_git)
    assert not _alive(git) and not _alive(child)
    assert not psutil.pid_exists(git), "git was not reaped (a zombie of ours)"
    assert {p.pid for p in psutil.Process().children(recursive=True)} - before == set()


def test_without_the_kill_git_outlives_its_trial(slow_git, tmp_path, monkeypatch):
    """The guard removed (the old `with Popen`: wait, no kill): the watchdog's second firing
    breaks the wait and git keeps running after the trial ended."""
    monkeypatch.setattr(hostgit, "_end", lambda proc: proc.wait())
    _call_across_the_watchdog(tmp_path)
    git, child = _started(slow_git)
    try:
        assert _alive(git) and _alive(child)
    finally:
        for pid in (git, child):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(git, 0)
        except ChildProcessError:
            pass
