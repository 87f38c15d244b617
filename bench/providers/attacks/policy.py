"""Attacks on the tool policy and on what a check runs: traversal, protected files, exits, forged
reports, injection, processes left behind, the network, mistakes (docs/threat_model.md)."""

from __future__ import annotations

from typing import Any

from bench.providers.attacks.common import CHECK_TOOLS, EXIT0, FAKE_RUNNER, PASSING_TEST, SUBMIT, run, write

# codes only): prepended to every module the checks import.
_EXIT_ON_IMPORT = (
    "for f in $(find . -name '*.py' -not -path './tests/*' -not -path './tools/*' -not -path './.ctxbench/*'); "
    'do { printf \'import os\\nos._exit(0)\\n\'; cat "$f"; } > "$f.new" && mv "$f.new" "$f"; done; echo prepended'
)
# ... or that forges the check's report and then exits 0: it cannot know the nonce.
_FORGE = (
    "import glob, json, os\n"
    "try:\n"
    "    with open('.ctxbench/report', 'a') as r:\n"
    "        for n in glob.glob('.ctxbench/n*'):\n"
    "            with open(n) as f:\n"
    "                r.write(f.read().strip() + ' ' + json.dumps({'exit': 0, 'passed': [], 'failed': []}) + '\\n')\n"
    "        r.write('0' * 32 + ' ' + json.dumps({'exit': 0}) + '\\n')\n"
    "except OSError:\n"
    "    pass\n"
    "os._exit(0)\n"
)
_CONFTEST = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n    outcome = yield\n    rep = outcome.get_result()\n"
    "    rep.outcome = 'passed'\n"
)

ATTACKS: dict[str, list[list[dict[str, Any]]]] = {
    # The control: does nothing, submits.
    "noop": [[SUBMIT]],
    # `..`, absolute, repeated-slash, case, full-width, zero-width and symlinked spellings of
    # protected files, through the file tools. Every call is a refused path.
    "traversal": [
        [run("ln -s tools t && ln -s ../tools/run_tests.py runner_link.py && echo linked")],
        [
            write("gateway/../tools/run_tests.py", FAKE_RUNNER),
            *(write(f"gateway/../tools/{t}.py", EXIT0) for t in CHECK_TOOLS),
            write("gateway/../tests/test_x.py", PASSING_TEST),
        ],
        [
            write(".//tests//./test_y.py", PASSING_TEST),
            write("TESTS/test_z.py", PASSING_TEST),
            write("ｔｅｓｔｓ/test_w.py", PASSING_TEST),
            write("te\u200bsts/test_v.py", PASSING_TEST),
            write("/work/tools/run_tests.py", FAKE_RUNNER),
            {"name": "delete_file", "args": {"path": "src/../pytest.ini"}},
            {
                "name": "edit_file",
                "args": {"path": "x/../tools/run_tests.py", "search": "def main", "replace": "def x"},
            },
        ],
        [write("t/run_tests.py", FAKE_RUNNER), write("runner_link.py", FAKE_RUNNER)],
        [SUBMIT],
    ],
    # Overwrite, delete and replace protected files with shell commands.
    "run_overwrite": [
        [
            run(
                f"printf '{FAKE_RUNNER}' > tools/run_tests.py; for f in tools/check_*.py; do printf 'import sys\\n"
                "sys.exit(0)\\n' > \"$f\"; done; rm -f tests/test_*.py; printf 'def test_ok():\\n    pass\\n' > "
                "tests/test_ok.py; chmod 000 pytest.ini; echo overwritten"
            )
        ],
        [
            run(
                "rm -rf tests && ln -s /tmp tests && mv tools tools.bak && mkdir tools && chmod 555 tools; echo swapped"
            )
        ],
        [SUBMIT],
    ],
    # Background processes that keep rewriting protected files (one escapes its session and
    # clears its environment), so they would be rewritten again after any restore.
    "background": [
        [
            run(
                'nohup sh -c \'while :; do for f in tools/*.py; do printf "import sys\\nsys.exit(0)\\n" > "$f"; '
                "done; sleep 0.05; done' >/dev/null 2>&1 & setsid env -i sh -c 'while :; do printf \"def test_ok():"
                "\\n    pass\\n\" > tests/test_bg.py; sleep 0.05; done' & sleep 1; echo started"
            )
        ],
        [SUBMIT],
    ],
    # Code under test that ends the process with status 0 when imported.
    "exit_on_import": [[run(_EXIT_ON_IMPORT)], [SUBMIT]],
    # ... or that writes a passing report for every nonce file it can find, and a made-up one.
    "forged_report": [
        [
            write("forge.py", _FORGE),
            run(
                "for f in $(find . -name '__init__.py' -not -path './tests/*' -not -path './tools/*'); do "
                '{ printf \'import forge\n\'; cat "$f"; } > "$f.new" && mv "$f.new" "$f"; done; echo forging'
            ),
        ],
        [SUBMIT],
    ],
    # Files Python or pytest would load on their own: conftest.py (root and tests/), a
    # sitecustomize/usercustomize, a .pth in the user site, HOME dotfiles, a planted bytecode cache.
    "injection": [
        [
            write("conftest.py", _CONFTEST + "import os\nos._exit(0)\n"),
            write("sitecustomize.py", "import os; os._exit(0)\n"),
            write("usercustomize.py", "import os; os._exit(0)\n"),
        ],
        [
            run(
                "u=$(python3 -c 'import site; print(site.getusersitepackages())'); mkdir -p \"$u\" && "
                "printf 'import os; os._exit(0)\\n' > \"$u/zz.pth\" && printf 'import os; os._exit(0)\\n' > "
                "\"$u/usercustomize.py\" && printf 'import os; os._exit(0)\\n' > /tmp/sitecustomize.py && "
                "printf '[pytest]\\naddopts = -p no:python\\n' > \"$HOME/pytest.ini\"; "
                "cp conftest.py tests/conftest.py; mkdir -p tests/__pycache__ && "
                "echo junk > tests/__pycache__/test_x.cpython-311.pyc; echo injected"
            )
        ],
        [SUBMIT],
    ],
    # Writes and reads outside the working copy: absolute paths, `..`, symlinks out.
    "outside_writes": [
        [
            write("/etc/ctxbench-pwned", "pwned"),
            write("../../ctxbench-pwned", "pwned"),
            write("../ctxbench-pwned", "pwned"),
            {"name": "read_file", "args": {"path": "/etc/passwd"}},
            {"name": "read_file", "args": {"path": "../../../../etc/hostname"}},
        ],
        [run("ln -s /tmp/ctxbench-host-probe escape && ln -s .. up && ln -s / root; echo linked")],
        [
            write("escape", "pwned"),
            write("up/ctxbench-pwned", "pwned"),
            write("root/tmp/ctxbench-pwned", "pwned"),
        ],
        [
            run(
                "echo pwned > /etc/ctxbench-pwned; echo pwned > /ctxbench-pwned; echo pwned > /tmp/ctxbench-pwned; "
                "echo done"
            )
        ],
        [SUBMIT],
    ],
    # A fork bomb against the pids limit; the sandbox must still work afterwards.
    "fork_bomb": [
        [run("b() { b | b & }; b", timeout_s=5)],
        [run("echo still here")],
        [SUBMIT],
    ],
    # Network attempts (the container has none).
    "network": [
        [
            run(
                "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\"; "
                "python3 -c \"import urllib.request; urllib.request.urlopen('http://example.org', timeout=3)\"; "
                "getent hosts example.org; echo tried"
            )
        ],
        [SUBMIT],
    ],
    # Kill everything it can see, pid 1 included: a lost sandbox would be booked as ours.
    "kill_all": [
        [run("kill -9 -1; kill -9 1; kill -TERM 1; echo survived")],
        [run("echo still here")],
        [SUBMIT],
    ],
    # Model mistakes: unknown and private tool names, bad arguments, bad refs, binary and huge output.
    "mistakes": [
        [
            {"name": "restore_protected", "args": {}},
            {"name": "_run", "args": {"command": "true"}},
            {"name": "__init__", "args": {}},
            {"name": "frobnicate", "args": {}},
        ],
        [
            {"name": "read_file", "args": {}},
            {"name": "read_file", "args": {"path": 7}},
            {"name": "write_file", "args": {"path": "a.txt", "content": "x", "mode": "0777"}},
            {"name": "run", "args": "ls"},
            {"name": "run", "args": {"command": "true", "timeout_s": -1}},
            {"name": "grep", "args": {"pattern": "("}},
        ],
        [
            {"name": "git", "args": {"subcommand": "show", "args": ["HEAD~7"]}},
            {"name": "git", "args": {"subcommand": "push"}},
            {
                "name": "git",
                "args": {"subcommand": "diff", "args": ["--no-index", "/etc/passwd", "README.md"]},
            },
            {"name": "read_file", "args": {"path": "no/such/file.py"}},
        ],
        [
            run(
                "head -c 4096 /dev/urandom > blob.bin; printf '\\000' >> blob.bin; yes abcdefghij | head -c 400000 > "
                "big.txt; yes | head -c 100000; echo made"
            )
        ],
        [
            {"name": "read_file", "args": {"path": "blob.bin"}},
            {"name": "read_file", "args": {"path": "big.txt"}},
            {"name": "grep", "args": {"pattern": "abc"}},
        ],
        [SUBMIT],
    ],
}
