"""git reaches only the repository (issue 42, item 5): whatever argument list the agent's `git`
tool sends, host git names no file outside the working copy, its git dir and its scratch home.

`git diff A B` with a path outside the work tree is, by git's own rule, `diff --no-index`,
which stats and opens host files as the harness's user (an existence and equality oracle).
An audit hook cannot see git's own syscalls, so every host git the tool starts runs under
`strace -f -e trace=%file` (open, openat, stat, lstat, access, readlink...: every syscall that
names a path), and each path it named is checked. A seeded fuzz of argument lists spells the
way out every way we know: `..`, `/proc/self/cwd`, symlinks out of the copy, pathspec magic,
revision syntax, odd bytes. Without the guard (`Tools._inside`), strace sees the host file."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from bench.core.types import ToolCall
from bench.sandbox import hostgit
from bench.trial import git_tool
from bench.trial.certify import HarnessCopy
from bench.trial.tools import Tools
from tests.bench.trial.conftest import tiny_task

FUZZ_LISTS = 1000
SEED = 42
# What git itself may name: its libraries, locale and helpers (nothing of the host's data).
SYSTEM = (
    "/lib",
    "/usr/lib",
    "/usr/share",
    "/usr/libexec",
    "/usr/local/lib",
    "/etc/ld.so.",
    "/etc/localtime",
    "/dev/null",
    "/dev/tty",
    "/sys/",
)

pytestmark = pytest.mark.skipif(
    shutil.which("strace") is None, reason="strace is installed by `make test` (setup)"
)


@pytest.fixture
def traced(box, tmp_path, monkeypatch):
    """The tool over `box`, every host git under strace; returns (tools, paths named outside)."""
    secret = tmp_path / "host" / "secret.txt"  # a host file beside the sandbox's scratch dir
    secret.parent.mkdir()
    secret.write_text("host data\n")
    (box.workdir / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    os.symlink(str(secret.parent), box.workdir / "out")  # a link out of the working copy
    os.symlink("..", box.workdir / "up")
    logs = tmp_path / "strace"
    logs.mkdir()
    real = subprocess.Popen
    count = [0]

    def popen(cmd, **kw):
        count[0] += 1
        log = logs / f"{count[0]}.log"
        return real(["strace", "-f", "-qq", "-e", "trace=%file", "-o", str(log), *cmd], **kw)

    monkeypatch.setattr(
        hostgit,
        "subprocess",
        types.SimpleNamespace(
            Popen=popen,
            PIPE=subprocess.PIPE,
            DEVNULL=subprocess.DEVNULL,
            TimeoutExpired=subprocess.TimeoutExpired,
        ),
    )
    allowed = (
        tuple(str(p) for p in (box.workdir, box._git_dir, box._root))
        + SYSTEM
        + tuple(d for d in os.environ.get("PATH", "").split(":") if d)
    )
    # git resolves its own work tree and git dir: it stats the directories on their way.
    on_the_way = {str(parent) for p in (box.workdir, box._git_dir, box._root) for parent in Path(p).parents}
    tools = Tools(box, HarnessCopy(tiny_task()), exec_timeout_s=20)

    def outside() -> list[str]:
        """What the git runs since the last look named outside the allowed places."""
        named = []
        for log in sorted(logs.iterdir()):
            for line in log.read_text(errors="replace").splitlines():
                if '"' not in line or line.split()[1].startswith(("execve", "+++", "---")):
                    continue
                path = line.split('"', 2)[1]
                full = os.path.normpath(path if path.startswith("/") else os.path.join(box.workdir, path))
                if not full.startswith(allowed) and full not in on_the_way:
                    named.append(f"{line.split('(')[0].split()[-1]} {full}")
            log.unlink()
        return named

    return tools, outside, secret, count


def _arg_lists(workdir: Path, secret: Path) -> list[tuple[str, list[str]]]:
    rng = random.Random(SEED)
    up = "../" * (str(workdir).count("/") + 1)
    targets = [
        f"{up}{str(secret).lstrip('/')}",
        os.path.relpath(secret, workdir),
        "out/secret.txt",
        "up/host/secret.txt",
        "up/../host/secret.txt",
        f"/proc/self/cwd/{os.path.relpath(secret, workdir)}",
        "/proc/self/root" + str(secret),
        f"calc.py/../{os.path.relpath(secret, workdir)}",
        f"./{os.path.relpath(secret, workdir)}",
        "..",
        "../",
        "../..",
        "up",
        "out",
        "calc.py",
        "README.md",
        "x\udc80",
        "\u00e9t\u00e9.py",
        "-",
        "a b",
        "tests/../../host/secret.txt",
        "HEAD",
    ]
    prefixes = [
        "",
        "",
        "",
        ":(top)",
        ":(icase)",
        ":(literal)",
        ":(glob)",
        ":!",
        ":/",
        "HEAD:",
        "HEAD:./",
        "HEAD~1:",
        "./",
        "calc.py/../",
        "up/",
        "out/",
    ]
    revisions = ["HEAD", "HEAD~1", "HEAD..HEAD", "HEAD^", "@", "HEAD@{0}"]
    lists = []
    for _ in range(FUZZ_LISTS):
        sub = rng.choice(git_tool.SUBCOMMANDS)
        args: list[str] = []
        for _ in range(rng.randint(1, 4)):
            roll = rng.random()
            if roll < 0.15:
                args.append(rng.choice(sorted(git_tool.FLAGS[sub])))
            elif roll < 0.25:
                args.append("--")
            elif roll < 0.35:
                args.append(rng.choice(revisions))
            else:
                args.append(rng.choice(prefixes) + rng.choice(targets))
        lists.append((sub, args))
    return lists


def test_no_git_argument_list_names_a_host_file(traced, box):
    tools, outside, secret, started = traced
    answers = {"ok": 0, "refused": 0, "git_error": 0}
    reached: list[tuple[str, list[str], list[str]]] = []
    for sub, args in _arg_lists(box.workdir, secret):
        call = ToolCall("c", "git", {"subcommand": sub, "args": args})  # admitted as a model's call is
        out = tools.call(call.name, call.args)
        answers["ok" if out.ok else "git_error" if out.error == "git_error" else "refused"] += 1
        assert "host data" not in out.text, (sub, args)
        named = outside()
        if named:
            reached.append((sub, args, named[:3]))
    assert reached == [], [(s, a) for s, a, _ in reached]
    # The fuzz reached git often and was refused often: both sides were exercised.
    assert started[0] > 150 and answers["refused"] > 150, (started[0], answers)


def test_without_the_guard_git_opens_the_host_file(traced, box, monkeypatch):
    """The guard removed: `git diff` with a path out of the copy is --no-index, and strace sees
    git name the host file (so the test above can fail)."""
    tools, outside, secret, _ = traced
    monkeypatch.setattr(Tools, "_inside", lambda self, operand: None)
    rel = os.path.relpath(secret, box.workdir)
    out = tools.call("git", {"subcommand": "diff", "args": ["--", rel, "calc.py"]})
    assert out.error == "git_error"  # exit 1: "they differ", the oracle (a missing file says so)
    assert any(str(secret) in p for p in outside()), outside()


def test_every_spelling_out_is_refused_before_git(traced, box):
    tools, outside, secret, started = traced
    rel = os.path.relpath(secret, box.workdir)
    for args in (
        ["--", rel, "calc.py"],
        [rel, "calc.py"],
        ["--stat", "out/secret.txt", "calc.py"],
        ["up/host/secret.txt", "calc.py"],
        ["calc.py/../" + rel, "README.md"],
        ["..", "calc.py"],
    ):
        out = tools.call("git", {"subcommand": "diff", "args": args})
        assert not out.ok and out.policy_violation, (args, out)
    assert started[0] == 0 and outside() == []
