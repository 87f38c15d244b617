"""Claude Code's dialect: every ctxbench call becomes a Read/Write/Edit/Bash tool_use (or, for the
hand-off, a text-only reply) that reads back to the same call, and Claude Code's tool_result texts
(as 2.1.197 sends them, measured through the proxy: docs/agents.md) read back as ctxbench's tool
results, so the sim perceives its own earlier calls as it made them."""

from __future__ import annotations

import pytest

from bench.core.render import file_block
from bench.core.types import Completion, Message, ToolCall, Usage
from bench.sim.dialects import DIALECTS
from bench.sim.dialects.claude_code import DIALECT, SUBMIT, UNCHANGED, decode, encode, read_text, result
from bench.sim.dialects.mini_bash import SUBMITTED

CALLS = [
    ("read_file", {"path": "src/a b's.py"}),
    ("write_file", {"path": "x.py", "content": "a = 1\nb = '$(rm -rf /)'\n"}),
    ("write_file", {"path": "-n.txt", "content": "no final newline"}),
    ("edit_file", {"path": "x.py", "search": "a = 1\n", "replace": 'a = "2"\n'}),
    ("delete_file", {"path": "old.py"}),
    ("list_files", {"glob": "*.py"}),
    ("grep", {"pattern": r"def \w+\(", "glob": "src/*"}),
    ("git", {"subcommand": "log", "args": ["--oneline", "-3"]}),
    ("run", {"command": "pytest -q tests/ && echo 'ok'"}),
]


@pytest.mark.parametrize(("name", "args"), CALLS)
def test_every_call_reads_back_exactly(name, args):
    tool, inp = encode(name, args)
    assert tool in ("Read", "Write", "Edit", "Bash")
    assert decode(tool, inp) == (name, args)


def test_claude_codes_recorded_edit_default_is_still_our_edit():
    # Claude Code writes `replace_all: false` into the tool_use it keeps in its history (measured)
    tool, inp = encode("edit_file", {"path": "a.py", "search": "x", "replace": "y"})
    assert decode(tool, {"replace_all": False, **inp}) == (
        "edit_file",
        {"path": "a.py", "search": "x", "replace": "y"},
    )
    assert decode(tool, {**inp, "replace_all": True})[0] == "Edit"  # not ours: it replaces every occurrence


def test_a_call_of_no_form_passes_as_it_is():
    for tool, inp in (
        ("Read", {"file_path": "/etc/passwd"}),
        ("Read", {"file_path": "/work/a", "offset": 3}),
        ("Agent", {"prompt": "x"}),
        ("Write", {"file_path": "rel.txt", "content": ""}),
    ):
        assert decode(tool, inp) == (tool, inp)


# The tool_result texts below are Claude Code 2.1.197's, as its requests carried them.
@pytest.mark.parametrize(
    ("name", "args", "sent", "ours"),
    [
        ("read_file", {"path": "README.md"}, "1\t# demo\n2\t", file_block("README.md", "# demo\n")),
        ("read_file", {"path": "a.py"}, "1\ta\n2\t\tb", file_block("a.py", "a\n\tb")),
        (
            "read_file",
            {"path": "e.txt"},
            "<system-reminder>Warning: the file exists but is shorter than the provided "
            "offset (1). The file has 1 lines.</system-reminder>",
            file_block("e.txt", ""),
        ),
        (
            "read_file",
            {"path": "nope"},
            "<tool_use_error>File does not exist.</tool_use_error>",
            "ERROR: File does not exist.",
        ),
        (
            "write_file",
            {"path": "new.txt", "content": "a\nb\n"},
            "File created successfully at: /work/new.txt (file "
            "state is current in your context — no need to Read it back)",
            "wrote new.txt\n" + file_block("new.txt", "a\nb\n"),
        ),
        (
            "edit_file",
            {"path": "README.md", "search": "demo", "replace": "DEMO"},
            "The file /work/README.md has been "
            "updated successfully. (file state is current in your context — no need to Read it back)",
            "edited README.md",
        ),
        (
            "edit_file",
            {"path": "README.md", "search": "nothere", "replace": "x"},
            "<tool_use_error>String to replace not found in file.\nString: nothere</tool_use_error>",
            "ERROR: String to replace not found in file.\nString: nothere",
        ),
        ("run", {"command": "echo out; echo err >&2; exit 3"}, "Exit code 3\nout\nerr", "exit=3\nout\nerr\n"),
        ("run", {"command": "echo fine"}, "fine", "exit=0\nfine\n"),
        ("delete_file", {"path": "old.py"}, "", "deleted old.py"),
        (
            "delete_file",
            {"path": "old.py"},
            "Exit code 1\nrm: cannot remove 'old.py': No such file or directory",
            "ERROR: rm: cannot remove 'old.py': No such file or directory",
        ),
    ],
)
def test_claude_codes_results_read_as_ctxbenchs(name, args, sent, ours):
    assert result(name, args, sent) == ours


def test_a_reminder_claude_code_appends_to_a_read_is_not_the_file():
    sent = (
        '1\t"""Batch."""\n2\t\n3\tx = 1\n4\n\n<system-reminder>\nThe task tools haven\'t been used '
        "recently.\n</system-reminder>\n"
    )  # measured: the empty last line lost its tab
    assert result("read_file", {"path": "b.py"}, sent) == file_block("b.py", '"""Batch."""\n\nx = 1\n')


def test_what_claude_code_does_not_show_again_is_the_file_as_the_context_last_showed_it():
    """Claude Code answers a Read of a file it holds unchanged with UNCHANGED, and shows nothing after
    an Edit: ctxbench's tools show the file both times, as the context last showed it."""
    calls = [
        ToolCall("r1", "Read", {"file_path": "/work/a.py"}),
        ToolCall(
            "e1",
            "Edit",
            {"replace_all": False, "file_path": "/work/a.py", "old_string": "x = 1", "new_string": "x = 2"},
        ),
        ToolCall("r2", "Read", {"file_path": "/work/a.py"}),
        ToolCall("e2", "Edit", {"file_path": "/work/u.py", "old_string": "a", "new_string": "b"}),
        ToolCall("r3", "Read", {"file_path": "/work/u.py"}),
    ]
    sent = [
        "1\tx = 1\n2\ty = 1\n3\t",
        "The file /work/a.py has been updated successfully.",
        f"{UNCHANGED}. Refer to that earlier tool_result instead.",
        "The file /work/u.py has been updated successfully.",
        f"{UNCHANGED}. Refer to that earlier tool_result instead.",
    ]
    convo = [Message(role="assistant", content="", tool_calls=tuple(calls))] + [
        Message(role="tool", content=t, tool_call_id=c.id) for c, t in zip(calls, sent, strict=True)
    ]
    back = [m.content for m in DIALECT.to_ctxbench(tuple(convo))[1:]]
    assert back[:3] == [
        file_block("a.py", "x = 1\ny = 1\n"),
        "edited a.py\n" + file_block("a.py", "x = 2\ny = 1\n"),
        file_block("a.py", "x = 2\ny = 1\n"),
    ]
    # a file the context never showed: no guess
    assert back[3:] == ["edited u.py", sent[4]]


def test_a_read_that_is_not_numbered_lines_passes_as_it_is():
    assert read_text("2\tstarts at two") is None
    assert result("read_file", {"path": "a"}, "some other text") == "some other text"


def _reply(calls, content=""):
    return Completion(
        content, tuple(calls), "tool_use" if calls else "end_turn", Usage(10, 5), 0.0, 0.0, "sim", "h"
    )


def test_the_sims_hand_off_is_a_text_only_reply_and_reads_back_as_its_submit():
    args = {"notes": "kept fetch(url, *legacy)", "invariants": ["x stays"]}
    out = DIALECT.from_ctxbench(
        _reply([ToolCall("call_1", "submit_step", args)], content="Step s01 is done.")
    )
    assert out.tool_calls == () and out.stop_reason == "end_turn"
    assert out.content.splitlines()[-1].startswith(f"{SUBMIT} call_1 ")
    back = DIALECT.to_ctxbench((Message(role="assistant", content=out.content),))
    assert [m.role for m in back] == ["assistant", "tool"]
    assert back[0].content == "Step s01 is done." and back[0].tool_calls == (
        ToolCall("call_1", "submit_step", args),
    )
    assert back[1].content == SUBMITTED and back[1].tool_call_id == "call_1"


def test_a_hand_off_beside_other_calls_waits_for_them():
    out = DIALECT.from_ctxbench(
        _reply([ToolCall("c1", "read_file", {"path": "a.py"}), ToolCall("c2", "submit_step", {"notes": "n"})])
    )
    assert [(c.id, c.name) for c in out.tool_calls] == [("c1", "Read")] and SUBMIT not in out.content


def test_a_conversation_reads_back_as_ctxbenchs_own():
    sim = _reply(
        [ToolCall("c1", "read_file", {"path": "README.md"}), ToolCall("c2", "run", {"command": "ls"})]
    )
    wire = DIALECT.from_ctxbench(sim)
    convo = (
        Message(role="system", content="You are Claude Code"),
        Message(role="user", content="<system-reminder>x</system-reminder>"),
        Message(role="user", content="do it"),
        Message(role="assistant", content="", tool_calls=wire.tool_calls),
        Message(role="tool", content="1\t# demo\n2\t", tool_call_id="c1"),
        Message(role="tool", content="README.md", tool_call_id="c2"),
    )
    back = DIALECT.to_ctxbench(convo)
    assert back[:3] == convo[:3]  # what is not a tool call or result is what Claude Code sent
    assert back[3].tool_calls == sim.tool_calls
    assert (back[4].content, back[4].name) == (file_block("README.md", "# demo\n"), "read_file")
    assert (back[5].content, back[5].name) == ("exit=0\nREADME.md\n", "run")


def test_the_dialect_is_registered():
    assert DIALECTS.load("claude_code") is DIALECT


def test_claude_codes_own_compaction_reads_as_ctxbenchs():
    """Measured texts: its summary request's last user message, and the message carrying the
    summary after it. The sim answers the first with a summary and reads the second as one."""
    from bench.sim.perception import SUMMARY_MARK
    from bench.sim.provider import COMPACTION_MARKER

    ask = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash"
    carried = (
        "This session is being continued from a previous conversation that ran out of context. The summary "
        "below covers the earlier portion of the conversation.\n\n[task:t1] the summary\n\nIf you need "
        "specific details from before compaction (like exact code snippets), read the full transcript at: /x"
    )
    back = DIALECT.to_ctxbench((Message(role="user", content=ask), Message(role="user", content=carried)))
    assert back[0].content == f"{COMPACTION_MARKER}\n{ask}"
    assert (
        back[1].content.startswith(f"{SUMMARY_MARK} TURNS")
        and "\n\n[task:t1] the summary\n\nIf you need" in back[1].content
    )
    plain = Message(role="user", content="This session is about something else")
    assert DIALECT.to_ctxbench((plain,)) == (plain,)
