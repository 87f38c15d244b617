"""The code under test out of process (bench/trial/remote.py, comparer.py): a comparer sees the
agent's modules as proxies of a server's, gets data back, and never runs a file of the agent's.
Each case runs a real server and comparer (fork, socketpair) in an interpreter of its own: the
comparer's audit hook cannot be removed once added."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# Forks a server (the tree's code) and makes this process the comparer, then runs BODY.
HARNESS = """
import os, socket, sys
sys.path.insert(0, {root!r})
from bench.trial import comparer, remote
tree = {tree!r}
ours, theirs = socket.socketpair()
if os.fork() == 0:
    ours.close()
    os.chdir(tree)
    remote.serve(theirs.fileno(), tree)
theirs.close()
os.chdir(tree)
sys.path.insert(0, tree)
peer = comparer.install(ours.fileno(), tree, ["tests/test_calc.py"])
"""


def _comparer(tmp_path: Path, files: dict[str, str], body: str) -> subprocess.CompletedProcess[str]:
    tree = tmp_path / "tree"
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    src = HARNESS.format(root=str(ROOT), tree=str(tree.resolve())) + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-I", "-B", "-c", src], capture_output=True, text=True, timeout=60)


CALC = (
    "import os\n\n\nclass Box:\n    def __init__(self, v):\n        self.v = v\n\n\n"
    "def add(a, b):\n    return a + b\n\n\ndef where():\n    return os.getpid()\n\n\n"
    "def shapes():\n    return [(1, 2), {'k': {3}}, b'x', None, 1.5]\n"
)


def test_the_agents_modules_are_the_servers_and_answers_are_data(tmp_path):
    out = _comparer(
        tmp_path,
        {"calc.py": CALC},
        """
        import calc
        assert type(calc).__name__ == "Module", type(calc)
        assert calc.add(2, 3) == 5
        assert calc.where() != os.getpid(), "the code under test ran in the comparer"
        assert calc.shapes() == [(1, 2), {"k": {3}}, b"x", None, 1.5]
        box = calc.Box(7)
        assert type(box).__name__ == "Ref" and box.v == 7 and isinstance(box, calc.Box)
        assert not isinstance(box, int) and box != 7
        try:
            calc.missing
        except AttributeError:
            print("ok")
    """,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_comparer_never_compiles_a_file_of_the_agents(tmp_path):
    """Whatever loads it (runpy, a loader called directly), a file of the tree that is not
    protected is refused in the comparer; a protected one runs."""
    out = _comparer(
        tmp_path,
        {"calc.py": "print('agent code ran here')\n", "tests/test_calc.py": "X = 1\n"},
        """
        import importlib.util, runpy
        assert runpy.run_path(os.path.join(tree, "tests/test_calc.py"))["X"] == 1
        for load in (lambda: runpy.run_path(os.path.join(tree, "calc.py")),
                     lambda: importlib.util.spec_from_file_location("c", os.path.join(tree, "calc.py"))
                     .loader.exec_module(importlib.util.module_from_spec(
                         importlib.util.spec_from_file_location("c", os.path.join(tree, "calc.py"))))):
            try:
                load()
            except ImportError as exc:
                print("refused:", exc)
    """,
    )
    assert out.returncode == 0, out.stderr
    assert "agent code ran here" not in out.stdout
    assert out.stdout.count("refused: the judge never runs code of the agent's (calc.py)") == 2, out.stdout


def test_a_module_of_the_tree_never_shadows_the_interpreters_own(tmp_path):
    out = _comparer(
        tmp_path,
        {"calendar.py": "print('shadow ran')\nmonth = None\n"},
        """
        import calendar
        assert calendar.month(2026, 12).strip().startswith("December"), calendar
        print("stdlib")
    """,
    )
    assert out.returncode == 0 and out.stdout.strip() == "stdlib", (out.stdout, out.stderr)


def test_an_answer_that_is_not_one_fails_the_request(tmp_path):
    """The server writing what it likes on its end (a forged 'passed' message, a tagged dict
    with a made-up tag) makes the request fail; the comparer says so and asks nothing more."""
    forge = (
        "import os\n"
        "def add(a, b):\n"
        '    os.write(3 if os.path.exists(\'/proc/self/fd/3\') else 4, b\'{"exit": 0, "passed": ["x"]}\\n\')\n'
        "    return 0\n"
        "def odd():\n"
        "    return 1\n"
    )
    out = _comparer(
        tmp_path,
        {"calc.py": forge},
        """
        import calc
        for call in (lambda: calc.add(2, 3), lambda: calc.odd()):
            try:
                print("answer:", call())
            except remote.RemoteGone as exc:
                print("gone:", exc)
        print("flag:", peer.gone)
    """,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("gone: the code under test's process ended or did not answer"), lines
    assert lines[1].startswith("gone:") and lines[2] == "flag: True", lines
