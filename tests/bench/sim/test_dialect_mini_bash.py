"""mini-swe-agent's dialect: every ctxbench call becomes one bash command that reads back to the
same call (odd paths, quotes, here-document delimiters inside the content, no final newline), the
commands do in a real shell what ctxbench's tools do, and their observations read back as ctxbench's
tool results, so the sim perceives its own earlier calls as it made them."""

from __future__ import annotations

import subprocess

import pytest

from bench.core.render import file_block
from bench.core.types import Completion, Message, ToolCall, Usage
from bench.sim.dialects import DIALECTS, DialectProvider
from bench.sim.dialects.mini_bash import DIALECT, SUBMIT, decode, encode, observation, result

CALLS = [
    ("read_file", {"path": "src/a b's.py"}),
    ("write_file", {"path": "x.py", "content": "a = 1\nCTXBENCH_EOF\nb = '$(rm -rf /)'\n"}),
    ("write_file", {"path": "-n.txt", "content": "no final newline"}),
    ("write_file", {"path": 'odd dir/it\'s "q".py', "content": "x = 1\n"}),
    ("write_file", {"path": "empty.txt", "content": ""}),
    ("edit_file", {"path": "x.py", "search": "a = 1\n", "replace": 'a = "2"\n'}),
    ("delete_file", {"path": "old.py"}),
    ("list_files", {}),
    ("list_files", {"glob": "*.py"}),
    ("grep", {"pattern": r"def \w+\(", "glob": "src/*"}),
    ("git", {"subcommand": "log", "args": ["--oneline", "-3"]}),
    ("submit_step", {"notes": "kept fetch(url, *legacy)", "invariants": ["x stays"]}),
    ("run", {"command": "pytest -q tests/ && echo 'ok'"}),
]


@pytest.mark.parametrize(("name", "args"), CALLS)
def test_every_call_reads_back_exactly(name, args):
    assert decode(encode(name, args)) == (name, args)


def test_a_command_of_no_form_is_run():
    for cmd in (
        "cat a b",
        "printf '%s\\n' COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT notjson",
        "git log | head",
        "cat > x <<'CTXBENCH_EOF'\nunterminated",
    ):
        assert decode(cmd) == ("run", {"command": cmd})


def _sh(cmd: str, cwd) -> tuple[int, str]:
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def _obs(rc: int, out: str) -> str:  # mini's observation template (minisweagent.models.litellm_model)
    return f"<returncode>{rc}</returncode>\n<output>\n{out}</output>"


def test_commands_do_what_ctxbenchs_tools_do(tmp_path):
    content = "a = 1\nCTXBENCH_EOF\nb = 2"
    rc, out = _sh(encode("write_file", {"path": "m.py", "content": content}), tmp_path)
    assert rc == 0 and (tmp_path / "m.py").read_text() == content
    assert (
        result("write_file", {"path": "m.py", "content": content}, _obs(rc, out))
        == f"wrote m.py\n{file_block('m.py', content)}"
    )  # as ctxbench's write_file returns it
    rc, out = _sh(encode("read_file", {"path": "m.py"}), tmp_path)
    assert result("read_file", {"path": "m.py"}, _obs(rc, out)) == file_block("m.py", content)
    rc, out = _sh(encode("edit_file", {"path": "m.py", "search": "b = 2", "replace": "b = 3"}), tmp_path)
    assert rc == 0 and result("edit_file", {"path": "m.py"}, _obs(rc, out)) == "edited m.py\n" + file_block(
        "m.py", "a = 1\nCTXBENCH_EOF\nb = 3"
    )
    rc, out = _sh(encode("edit_file", {"path": "m.py", "search": "zzz", "replace": "y"}), tmp_path)
    assert rc == 1 and result("edit_file", {"path": "m.py"}, _obs(rc, out)).startswith(
        "ERROR: search text not found"
    )
    rc, out = _sh(encode("grep", {"pattern": "b = ", "glob": "*.py"}), tmp_path)
    assert out.strip() == "m.py:3:b = 3"
    rc, out = _sh(encode("list_files", {}), tmp_path)
    assert out.strip() == "m.py"
    rc, out = _sh(encode("submit_step", {"notes": "n"}), tmp_path)
    assert rc == 0 and out.splitlines()[0] == SUBMIT  # mini's end of task (LocalEnvironment._check_finished)
    assert observation(_obs(0, "x\n")) == (0, "x\n")
    assert observation('{\n  "returncode": 2,\n  "output": "no\\n"\n}') == (2, "no\n")  # mini.yaml's template


def _completion(calls):
    return Completion(
        content="thinking",
        tool_calls=tuple(calls),
        stop_reason="tool_use",
        usage=Usage(1, 1),
        latency_s=0.0,
        ttft_s=0.0,
        model_id="sim",
        request_hash="h",
    )


class _Recorder:
    model_id = "sim"

    def __init__(self, replies):
        self.replies, self.seen = list(replies), []

    def complete(self, messages, tools, **kw):
        self.seen.append((messages, tools))
        return self.replies.pop(0)


def test_the_sim_sees_ctxbench_tools_and_the_agent_sees_bash():
    inner = _Recorder(
        [
            _completion(
                [ToolCall("c1", "read_file", {"path": "a.py"}), ToolCall("c2", "run", {"command": "ls"})]
            ),
            _completion([]),
        ]
    )
    provider = DialectProvider(inner, DIALECTS.load("mini_bash"))
    msgs = (
        Message(role="system", content="You are a helpful assistant"),
        Message(role="user", content="[task:t] go"),
    )
    reply = provider.complete(msgs, (), max_tokens=100, seed=1)
    assert [c.name for c in reply.tool_calls] == ["bash", "bash"]
    assert reply.tool_calls[0].args == {"command": "cat -- a.py"}
    # the agent sends its history back: the sim reads its own calls and ctxbench-shaped results
    history = (
        *msgs,
        reply.as_message(),
        Message(role="tool", tool_call_id="c1", content=_obs(0, "x = 1\n")),
        Message(role="tool", tool_call_id="c2", content=_obs(0, "a.py\n")),
    )
    provider.complete(history, (), max_tokens=100, seed=1)
    seen, _ = inner.seen[1]
    assert [c.name for c in seen[2].tool_calls] == ["read_file", "run"]
    assert seen[3].content == file_block("a.py", "x = 1\n") and seen[4].content == "exit=0\na.py\n"
    assert DIALECT.to_ctxbench(history)[:2] == msgs
