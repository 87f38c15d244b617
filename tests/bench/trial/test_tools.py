"""The agent's tools on the host (LocalSandbox): dispatch through the published list only,
arguments validated against the schemas, the path policy, and every model mistake returned
as a tool result, never raised. Each guard is attacked here."""

from __future__ import annotations

import pytest

from bench.core.toolspecs import TOOLS
from bench.sandbox.paths import PathRefused
from bench.trial.certify import HarnessCopy
from bench.trial.tools import MAX_FILE_BYTES, ToolOutcome, Tools
from tests.bench.trial.conftest import TEST_CALC, tiny_task


@pytest.fixture
def tools(box):
    return Tools(box, HarnessCopy(tiny_task()), exec_timeout_s=20)


@pytest.mark.parametrize(
    "name",
    ["restore_protected", "_run", "_writable", "__init__", "call", "submit_step", "frobnicate", "", None, 3],
)
def test_only_published_tools_dispatch(tools, name):
    out = tools.call(name, {})
    assert not out.ok and out.error == "unknown_tool" and "unknown tool" in out.text
    assert all(t.name in out.text for t in TOOLS)


@pytest.mark.parametrize(
    ("name", "args", "why"),
    [
        ("read_file", {}, "'path' is a required property"),
        ("read_file", {"path": 7}, "7 is not of type 'string'"),
        ("write_file", {"path": "a.txt", "content": "x", "mode": "0777"}, "Additional properties"),
        ("run", "ls", "must be a JSON object"),
        ("run", None, "must be a JSON object"),
        ("run", {"command": "true", "timeout_s": "soon"}, "'soon' is not of type 'number'"),
        ("run", {"command": "true", "timeout_s": -1}, "timeout_s must be > 0"),
        ("git", {"subcommand": "push"}, "'push' is not one of"),
        ("git", {"subcommand": "log", "args": "HEAD"}, "'HEAD' is not of type 'array'"),
        ("grep", {"pattern": "("}, "bad regular expression"),
    ],
)
def test_bad_arguments_are_the_models_mistake(tools, name, args, why):
    out = tools.call(name, args)
    assert not out.ok and out.error == "bad_arguments" and why in out.text, out.text


@pytest.mark.parametrize(
    "path",
    [
        "gateway/../tests/test_calc.py",
        "./tests//test_calc.py",
        "TESTS/test_calc.py",
        "Tests/new.py",
        "ｔｅｓｔｓ/test_calc.py",
        "te\u200bsts/test_calc.py",
        "tools/run_tests.py",
        "x/../tools/evil.py",
        "PYTEST.INI",
        "tests",
        "../outside.txt",
        "a/../../outside.txt",
        ".git/config",
        "src/.GIT/hooks/x",
    ],
)
def test_writes_to_protected_or_outside_paths_are_refused_and_are_violations(tools, box, path):
    for name, args in (
        ("write_file", {"path": path, "content": "def test_x():\n    pass\n"}),
        ("edit_file", {"path": path, "search": "assert", "replace": "pass"}),
        ("delete_file", {"path": path}),
    ):
        out = tools.call(name, args)
        assert not out.ok and out.policy_violation and out.error is None, (name, path, out)
    assert box.read_file("tests/test_calc.py") == TEST_CALC


@pytest.mark.parametrize("path", ["/tmp/notes.txt", "/temp", "/work/tests/test_calc.py", "/etc/passwd"])
def test_absolute_paths_are_refused_as_mistakes_not_attacks(tools, box, path):
    """Issue 21, defect 7: a weak model writes `/tmp`; 16 such calls in one trial were counted as
    policy violations, the metric for attempts on the harness. Still refused, now a tool error."""
    for name, args in (
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "x"}),
        ("edit_file", {"path": path, "search": "assert", "replace": "pass"}),
        ("delete_file", {"path": path}),
    ):
        out = tools.call(name, args)
        assert not out.ok and out.policy_violation is None and out.error == "absolute_path", (name, path, out)
        assert "absolute paths are not allowed" in out.text
    assert box.read_file("tests/test_calc.py") == TEST_CALC


def test_symlinks_into_protected_files_or_out_of_the_copy_are_refused(tools, box):
    assert (
        box.exec(
            "ln -s tests t && ln -s tests/test_calc.py link.py && ln -s /etc out && ln -s .. up"
        ).exit_code
        == 0
    )
    for path in ("t/test_calc.py", "t/new_test.py", "link.py", "out/passwd", "up/x", "out"):
        out = tools.call("write_file", {"path": path, "content": "x"})
        assert not out.ok and out.policy_violation, (path, out)
    for path in ("out/passwd", "up/work/x"):
        out = tools.call("read_file", {"path": path})
        assert not out.ok and "outside" in out.text
    assert box.read_file("tests/test_calc.py") == TEST_CALC


def test_canonical_paths_are_used_for_ordinary_files(tools, box):
    out = tools.call("write_file", {"path": "./src//pkg/../calc.py", "content": "X = 1\n"})
    assert out.ok and out.changed == ("src/calc.py",) and box.read_file("src/calc.py") == "X = 1\n"
    assert tools.call("read_file", {"path": "src/./calc.py"}).ok


def test_a_run_that_changes_protected_files_is_undone_from_the_harness_copy(tools, box):
    out = tools.call(
        "run",
        {
            "command": "echo gutted > tests/test_calc.py; echo new > tests/new.py; "
            "chmod 000 pytest.ini; rm -rf tools && ln -s /tmp tools"
        },
    )
    assert out.policy_violation and "restored" in out.text
    assert set(out.policy_violation.split(", ")) == {
        "tests/test_calc.py",
        "tests/new.py",
        "pytest.ini",
        "tools/run_tests.py",
    }
    assert box.read_file("tests/test_calc.py") == TEST_CALC and "tests/new.py" not in box.list_files()
    assert box.exec("test -d tools && ! test -L tools && test -f tools/run_tests.py").exit_code == 0


def test_the_harness_copy_never_comes_from_the_working_copy(box):
    # tampered before the trial's tools exist
    box.write_file("tests/test_calc.py", "def test_x():\n    pass\n")
    tools = Tools(box, HarnessCopy(tiny_task()), exec_timeout_s=20)
    out = tools.call("run", {"command": "true"})
    assert out.policy_violation == "tests/test_calc.py" and box.read_file("tests/test_calc.py") == TEST_CALC


def test_processes_a_command_leaves_are_ended_and_reported(tools, box):
    out = tools.call(
        "run",
        {
            "command": "sh -c 'while :; do echo x > loop.txt; sleep 0.05; done' >/dev/null 2>&1 & "
            "setsid sleep 300 & echo started"
        },
    )
    assert out.ok and out.ended and "left" in out.text
    assert box.reap() == []  # nothing left to end
    before = box.read_file("loop.txt")
    assert box.exec("sleep 0.3; cat loop.txt").output.strip() == before.strip()


def test_bad_git_refs_and_options_are_tool_results(tools):
    out = tools.call("git", {"subcommand": "show", "args": ["HEAD~7"]})
    assert not out.ok and out.error == "git_error" and "HEAD~7" in out.text
    for bad in (["--output=/tmp/x"], ["--no-index", "/etc/passwd", "README.md"], ["--ext-diff"]):
        out = tools.call("git", {"subcommand": "diff", "args": bad})
        assert not out.ok and out.error == "bad_arguments"
    assert tools.call("git", {"subcommand": "log", "args": ["--oneline"]}).ok


def test_binary_and_huge_output_is_capped_and_said(tools, box):
    box.exec(
        "head -c 2000 /dev/urandom > blob.bin; printf '\\000' >> blob.bin; "
        f"yes abcdefghi | head -c {MAX_FILE_BYTES * 2} > big.txt"
    )
    out = tools.call("read_file", {"path": "blob.bin"})
    assert not out.ok and out.error == "binary_output" and "binary" in out.text
    out = tools.call("read_file", {"path": "big.txt"})
    assert out.ok and out.error == "output_capped" and "only its start" in out.text
    assert len(out.text) < MAX_FILE_BYTES + 1000
    assert tools.call("grep", {"pattern": "abc"}).text.endswith("more matches")


def test_missing_files_and_directories_are_tool_results(tools):
    for name, args in (
        ("read_file", {"path": "no/such.py"}),
        ("delete_file", {"path": "nope.py"}),
        ("edit_file", {"path": "nope.py", "search": "a", "replace": "b"}),
        ("read_file", {"path": "tests"}),
    ):
        out = tools.call(name, args)
        assert not out.ok and out.error in ("not_found", "io_error"), (name, out)


def test_path_refusal_is_the_canonicaliser(box):
    with pytest.raises(PathRefused):
        box.read_file("a/../../x")


def test_a_command_past_max_arg_strlen_is_refused_with_its_reason(tools):
    from bench.core import emitted

    out = tools.call("run", {"command": "true " + "#" * emitted.MAX_ARG_STRLEN})
    assert (
        not out.ok and out.error == "bad_arguments" and "MAX_ARG_STRLEN" in out.text and "script" in out.text
    )
    assert tools.call("run", {"command": "true " + "#" * 1000}).ok  # a long honest command runs
    # (Without the guard Docker answers `exit=1` and no reason: test_adversary_unguarded.py.)


def test_what_a_tool_answers_is_carried():
    """An undecodable file name (read as a lone surrogate) in a result becomes text the next
    request can encode, the same way wherever it came from."""
    out = ToolOutcome("bad\udcff.py", ok=True)
    assert out.text == "bad\\udcff.py" and out.text.encode("utf-8")
