"""Codex's dialect: every ctxbench call becomes one `exec_command` that reads back to the same call,
a lone `submit_step` becomes the text reply that ends Codex's turn and reads back as the call and
its result, and Codex's rendering of a command's result reads back as ctxbench's tool result, so
the sim perceives its own earlier calls as it made them. The results are checked against Codex's
own rendering, captured from Codex 0.171.0 (and, where it is installed, produced by it:
tests/bench/agents/test_codex.py runs the real binary)."""

from __future__ import annotations

import subprocess

import pytest

from bench.core.render import file_block
from bench.core.types import Completion, Message, ToolCall, Usage
from bench.sim.dialects import DIALECTS, DialectProvider
from bench.sim.dialects.codex import (
    DIALECT,
    SUBMIT_ID,
    batch,
    output,
    result,
    submit_text,
    submitted,
    unbatch,
)
from bench.sim.dialects.mini_bash import SUBMIT, SUBMITTED
from tests.bench.sim.test_dialect_mini_bash import CALLS

# Codex 0.171.0's function_call_output for `echo hello; ls` and `cat nofile`, as it sent them
CAPTURED = (
    "Chunk ID: 9910ca\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 3\n"
    "Output:\nhello\na.txt\n"
)
CAPTURED_FAIL = (
    "Chunk ID: 09d14b\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 10\n"
    "Output:\ncat: nofile: No such file or directory\n"
)
RUNNING = "Chunk ID: 1a2b3c\nWall time: 10.0021 seconds\nProcess running with session ID 4\nOriginal token count: 0\nOutput:\n"


def _completion(calls, content="thinking"):
    return Completion(
        content=content,
        tool_calls=tuple(calls),
        stop_reason="tool_use" if calls else "end_turn",
        usage=Usage(1, 1),
        latency_s=0.0,
        ttft_s=0.0,
        model_id="sim",
        request_hash="h",
    )


@pytest.mark.parametrize(("name", "args"), [c for c in CALLS if c[0] != "submit_step"])
def test_every_call_is_one_exec_command_that_reads_back_exactly(name, args):
    reply = DIALECT.from_ctxbench(_completion([ToolCall("c1", name, args)]))
    (call,) = reply.tool_calls
    assert call.name == "exec_command" and set(call.args) == {"cmd"}
    (back,) = DIALECT.to_ctxbench((reply.as_message(),))[0].tool_calls
    assert (back.id, back.name, back.args) == ("c1", name, args)


@pytest.mark.parametrize("content", ["Step s01 is done; submitting it.", "", "two\n\nparagraphs\n\n"])
def test_a_lone_submit_ends_the_turn_as_text_and_reads_back_as_the_call_and_its_result(content):
    args = {"notes": "kept fetch(url, *legacy)\nsecond line", "invariants": ["x stays", "é"]}
    reply = DIALECT.from_ctxbench(_completion([ToolCall("c9", "submit_step", args)], content))
    assert reply.tool_calls == () and reply.stop_reason == "end_turn"
    assert reply.content.splitlines()[-1].startswith(f"{SUBMIT} {{")
    assert submitted(reply.content) == (content, args)
    msgs = (Message(role="user", content="[task:t] go"), reply.as_message())
    own = DIALECT.to_ctxbench(msgs)
    assert own[0] == msgs[0]
    assert (own[1].content, [(c.id, c.name, c.args) for c in own[1].tool_calls]) == (
        content,
        [(SUBMIT_ID.format(1), "submit_step", args)],
    )
    assert (own[2].role, own[2].tool_call_id, own[2].content) == ("tool", SUBMIT_ID.format(1), SUBMITTED)


def test_several_calls_of_one_reply_are_one_command_run_in_order_and_read_back_as_each_call(tmp_path):
    """Codex runs a reply's calls concurrently: the dialect sends them as one command that runs them
    in the sim's order, and reads its output back as one ctxbench result per call."""
    calls = [
        ToolCall("a", "write_file", {"path": "m b.py", "content": "x = 1\n)\n"}),
        ToolCall("b", "edit_file", {"path": "m b.py", "search": "x = 1", "replace": "x = 2"}),
        ToolCall("c", "edit_file", {"path": "m b.py", "search": "zzz", "replace": "y"}),
        ToolCall("d", "read_file", {"path": "m b.py"}),
        ToolCall("e", "submit_step", {"notes": "n"}),
    ]
    reply = DIALECT.from_ctxbench(_completion(calls))
    (call,) = reply.tool_calls
    assert call.name == "exec_command" and unbatch(call.args["cmd"]) is not None
    done = subprocess.run(["bash", "-lc", call.args["cmd"]], cwd=tmp_path, capture_output=True, text=True)
    rendered_by_codex = CAPTURED.replace("hello\na.txt\n", done.stdout)
    own = DIALECT.to_ctxbench(
        (reply.as_message(), Message(role="tool", tool_call_id="a", content=rendered_by_codex))
    )
    assert [(c.id, c.name, c.args) for c in own[0].tool_calls] == [
        (f"a.{k}", c.name, c.args) for k, c in enumerate(calls)
    ]
    assert [m.tool_call_id for m in own[1:]] == [f"a.{k}" for k in range(5)]
    one, two = "x = 1\n)\n", "x = 2\n)\n"
    assert [m.content for m in own[1:]] == [
        "wrote m b.py\n" + file_block("m b.py", one),
        "edited m b.py\n" + file_block("m b.py", two),
        "ERROR: search text not found in m b.py; re-read the file and retry",
        file_block("m b.py", two),
        SUBMITTED,
    ]
    # an output Codex cut in its middle does not split: each call is shown Codex's text
    cut = DIALECT.to_ctxbench((reply.as_message(), Message(role="tool", tool_call_id="a", content=CAPTURED)))
    assert [m.content for m in cut[1:]] == [CAPTURED] * 5


def test_a_command_that_only_looks_like_a_batch_is_one_command():
    one = batch(["echo a", "echo b"])
    for cmd in (one + "echo c\n", one.replace("echo b", "echo b'"), one.replace("(\n", "", 1)):
        assert unbatch(cmd) is None
    assert unbatch(one) == ["echo a", "echo b"]


def test_text_that_only_looks_like_a_submit_is_text():
    for text in (
        f"{SUBMIT} not json",
        f"{SUBMIT} [1, 2]",
        f"prefix {SUBMIT} {{}}",
        f"{SUBMIT} {{}}\ntrailing",
    ):
        assert submitted(text) is None
        msg = Message(role="assistant", content=text)
        assert DIALECT.to_ctxbench((msg,)) == (msg,)


def test_codex_s_rendering_of_a_result_reads_back_as_ctxbench_s_tool_result():
    assert output(CAPTURED) == (0, "hello\na.txt\n")
    assert output(CAPTURED_FAIL) == (1, "cat: nofile: No such file or directory\n")
    assert result("run", {"command": "echo hello; ls"}, CAPTURED) == "exit=0\nhello\na.txt\n"
    read = CAPTURED.replace("hello\na.txt\n", "x = 1\n")
    assert result("read_file", {"path": "a.py"}, read) == file_block("a.py", "x = 1\n")
    assert (
        result("read_file", {"path": "nofile"}, CAPTURED_FAIL)
        == "ERROR: cat: nofile: No such file or directory"
    )
    # a command still running, or any text of another form, is what Codex sent
    assert output(RUNNING) == (None, RUNNING) and result("run", {"command": "sleep 99"}, RUNNING) == RUNNING
    assert (
        result("read_file", {"path": "a"}, "exec_command failed: no shell") == "exec_command failed: no shell"
    )


class _Recorder:
    model_id = "sim"

    def __init__(self, replies):
        self.replies, self.seen = list(replies), []

    def complete(self, messages, tools, **kw):
        self.seen.append((messages, tools))
        return self.replies.pop(0)


def test_the_sim_sees_ctxbench_tools_and_codex_sees_exec_command():
    inner = _Recorder(
        [
            _completion([ToolCall("c1", "read_file", {"path": "a.py"})]),
            _completion([ToolCall("c2", "submit_step", {"notes": "done"})], "Step s01 is done."),
        ]
    )
    provider = DialectProvider(inner, DIALECTS.load("codex"))
    msgs = (
        Message(role="system", content="You are a coding agent running in the Codex CLI"),
        Message(role="user", content="<environment_context>\n  <cwd>/work</cwd>\n</environment_context>"),
        Message(role="user", content="[task:t] go"),
    )
    first = provider.complete(msgs, (), max_tokens=100, seed=1)
    assert first.tool_calls[0].args == {"cmd": "cat -- a.py"}
    assert first.extra["ctxbench_calls"][0]["name"] == "read_file"
    history = (
        *msgs,
        first.as_message(),
        Message(role="tool", tool_call_id="c1", content=CAPTURED.replace("hello\na.txt\n", "x = 1\n")),
    )
    second = provider.complete(history, (), max_tokens=100, seed=1)
    assert second.tool_calls == () and submitted(second.content) == ("Step s01 is done.", {"notes": "done"})
    seen, _ = inner.seen[1]
    assert seen[:3] == msgs and [c.name for c in seen[3].tool_calls] == ["read_file"]
    assert seen[4].content == file_block("a.py", "x = 1\n")
    # the next instruction's request carries the submitting reply: read back as the call and its result
    later = DIALECT.to_ctxbench((*history, second.as_message(), Message(role="user", content="next step")))
    assert [m.role for m in later[-3:]] == ["assistant", "tool", "user"] and later[-2].content == SUBMITTED


def test_submit_text_without_own_text_is_the_line_alone():
    assert submit_text("", {"notes": "n"}) == f'{SUBMIT} {{"notes": "n"}}'


def test_codexs_own_compaction_reads_as_ctxbenchs():
    """Codex 0.171.0's texts: its summary request's user item, and the user item carrying the
    summary after it. The sim answers the first with a summary and reads the second as one."""
    from bench.sim.dialects.codex import DIALECT as CODEX
    from bench.sim.perception import SUMMARY_MARK
    from bench.sim.provider import COMPACTION_MARKER

    ask = (
        "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that "
        "will resume the task."
    )
    carried = (
        "Another language model started to solve this problem and produced a summary of its thinking "
        "process. You also have access to the state of the tools that were used by that language model. Use "
        "this to build on the work that has already been done and avoid duplicating work. Here is the summary "
        "produced by the other language model, use the information in this summary to assist with your own "
        "analysis:\n[task:t1] the summary"
    )
    back = CODEX.to_ctxbench((Message(role="user", content=ask), Message(role="user", content=carried)))
    assert back[0].content == f"{COMPACTION_MARKER}\n{ask}"
    assert back[1].content.startswith(f"{SUMMARY_MARK} TURNS") and back[1].content.endswith(
        "\n\n[task:t1] the summary"
    )
    plain = Message(role="user", content="Another task entirely")
    assert CODEX.to_ctxbench((plain,)) == (plain,)
