"""The model proxy: each wire API through the vendor's own SDK, streamed and not, over TCP and a
unix socket; every request on the record so that verify rebuilds it; window refusals byte for
byte as the emulated provider sends them, and read by the error table as a context overflow."""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path

import anthropic
import openai
import pytest

from bench.core.types import Message, ToolSpec
from bench.eventlog.verify import verify
from bench.eventlog.writer import EventLog
from bench.providers.base import ProviderError
from bench.providers.http import errors as error_table
from bench.providers.scripted import ScriptedProvider
from bench.proxy.server import ModelProxy
from ctxlog import events as ev
from ctxlog.reader import Log

SEED = 7001
BASH = {
    "name": "bash",
    "description": "run a command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}
SCRIPT = [
    [{"name": "bash", "args": {"command": "ls -la"}}],
    [{"name": "bash", "args": {"command": "cat a.py"}}],
]


def _log(tmp_path: Path) -> EventLog:
    log = EventLog(tmp_path / "events.jsonl")
    log.append(
        ev.TrialStart(
            trial_id="t",
            task_id="x",
            strategy="agent",
            arm="baseline",
            seed=SEED,
            max_output=4096,
            schema=ev.SCHEMA,
        )
    )
    return log


def _proxy(tmp_path: Path, **kw) -> ModelProxy:
    return ModelProxy(ScriptedProvider(SCRIPT, when_done="stop"), _log(tmp_path), seed=SEED, **kw)


def _verified(tmp_path: Path) -> Log:
    rebuilt, problems = verify(tmp_path / "events.jsonl")
    assert problems == [] and rebuilt > 0
    return Log.from_path(tmp_path / "events.jsonl")


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_through_the_sdk_recorded_and_verified(tmp_path, stream):
    with _proxy(tmp_path) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0)
        msgs = [{"role": "user", "content": "[task:demo] do the step"}]
        kw = {"model": "claude-test", "max_tokens": 1000, "system": "you are an agent", "tools": [BASH]}
        if stream:
            with client.messages.stream(messages=msgs, **kw) as s:
                first = s.get_final_message()
        else:
            first = client.messages.create(messages=msgs, **kw)
        call = next(b for b in first.content if b.type == "tool_use")
        assert (call.name, call.input, first.stop_reason) == ("bash", {"command": "ls -la"}, "tool_use")
        msgs += [
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "a.py"}]},
        ]
        second = client.messages.create(messages=msgs, **kw)
        assert second.content[-1].input == {"command": "cat a.py"}
        assert client.messages.count_tokens(model="claude-test", messages=msgs).input_tokens > 0
    log = _verified(tmp_path)
    requests, replies = log.of(ev.AgentRequest), log.of(ev.AgentReply)
    assert [r.thread for r in requests] == ["main", "main", "count_tokens"] and len(replies) == 3
    assert [c.context.turn for c in log.calls] == [0, 1]
    assert replies[0].stream is stream and replies[0].usage["input"] > 0
    # step 2's request carries step 1's turn: the context grew by the assistant turn and its result
    first_ctx, second_ctx = (c.messages for c in log.calls)
    assert second_ctx[: len(first_ctx)] == first_ctx and second_ctx[-1]["role"] == "tool"
    assert json.loads(requests[1].body)["messages"][1]["content"][0]["id"] == call.id  # byte for byte


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_and_responses_through_the_sdk(tmp_path, stream):
    tool_chat = [{"type": "function", "function": {"name": "bash", "parameters": BASH["input_schema"]}}]
    tool_resp = [{"type": "function", "name": "exec_command", "parameters": BASH["input_schema"]}]
    with _proxy(tmp_path) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="x", max_retries=0)
        chat = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], tools=tool_chat, stream=stream
        )
        if stream:
            chunks = list(chat)
            args = "".join(
                c.choices[0].delta.tool_calls[0].function.arguments or ""
                for c in chunks
                if c.choices and c.choices[0].delta.tool_calls
            )
        else:
            args = chat.choices[0].message.tool_calls[0].function.arguments
        assert json.loads(args) == {"command": "ls -la"}
        kw = {"model": "m", "instructions": "you are codex", "tools": tool_resp}
        items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]}]
        if stream:
            with client.responses.stream(input=items, **kw) as s:
                resp = s.get_final_response()
        else:
            resp = client.responses.create(input=items, **kw)
        fc = next(o for o in resp.output if o.type == "function_call")
        assert json.loads(fc.arguments) == {"command": "cat a.py"} and resp.usage.input_tokens > 0
        items += [
            {"type": "function_call", "call_id": fc.call_id, "name": fc.name, "arguments": fc.arguments},
            {"type": "function_call_output", "call_id": fc.call_id, "output": "print(1)"},
        ]
        client.responses.create(input=items, **kw)
    log = _verified(tmp_path)
    assert [r.api for r in log.of(ev.AgentRequest)] == ["openai_chat", "openai_responses", "openai_responses"]
    last = log.calls[-1].messages
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool"]
    assert last[2]["tool_calls"][0]["name"] == "bash" and last[3]["content"] == "print(1)"


def _answer_all_apis(tmp_path: Path, seed: int) -> list[dict]:
    """Each API, streamed and not, answered by a proxy with `seed`; the log's records without
    their volatile parts (`t`, `prev`: docs/design.md §12 rule 6)."""
    chat = {
        "model": "m",
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": BASH["input_schema"]}}],
    }
    requests = [
        (
            "/v1/messages",
            {
                "model": "m",
                "max_tokens": 100,
                "tools": [BASH],
                "messages": [{"role": "user", "content": "go"}],
            },
        ),
        ("/v1/chat/completions", chat),
        (
            "/v1/responses",
            {
                "model": "m",
                "input": "go",
                "tools": [{"type": "function", "name": "exec_command", "parameters": BASH["input_schema"]}],
            },
        ),
    ]
    provider = ScriptedProvider(SCRIPT * 6, when_done="stop")
    proxy = ModelProxy(provider, _log(tmp_path), seed=seed)
    for stream in (False, True):
        for path, body in requests:
            status, _, _ = proxy.handle(path, json.dumps({**body, "stream": stream}).encode(), {})
            assert status == 200
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in ("t", "prev")} for r in records]


def test_the_same_seed_records_the_same_replies_byte_for_byte(tmp_path):
    first, second = _answer_all_apis(tmp_path / "a", SEED), _answer_all_apis(tmp_path / "b", SEED)
    replies = [r for r in first if r["kind"] == "agent_reply"]
    assert len(replies) == 6 and {r["api"] for r in replies} == {
        "anthropic",
        "openai_chat",
        "openai_responses",
    }
    assert first == second  # ids and stamps included: nothing of a clock or chance in a reply
    ids = [json.loads(r["body"])["id"] for r in replies if not r["stream"]]
    assert len(set(ids)) == 3  # a reply id per reply, not one for all
    other = [r["body"] for r in _answer_all_apis(tmp_path / "c", SEED + 1) if r["kind"] == "agent_reply"]
    assert other != [r["body"] for r in replies]  # the seed is part of the id


def test_window_refusals_are_the_providers_own_bytes_and_read_as_context_overflow(tmp_path):
    long = "word " * 400
    with _proxy(tmp_path, window=200) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0)
        with pytest.raises(anthropic.BadRequestError) as exc:
            client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": long}])
        chat = openai.OpenAI(base_url=proxy.url + "/v1", api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError) as oexc:
            chat.chat.completions.create(model="m", messages=[{"role": "user", "content": long}])
        with pytest.raises(openai.BadRequestError) as rexc:
            chat.responses.create(model="m", input=long)
    tokens = Log.from_path(tmp_path / "events.jsonl").of(ev.AgentRequest)[0].tokens
    assert exc.value.status_code == 400
    assert exc.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: {tokens} tokens > 200 maximum",
        },
    }
    assert oexc.value.code == rexc.value.code == "context_length_exceeded"
    assert "maximum context length is 200 tokens" in oexc.value.message
    log = Log.from_path(tmp_path / "events.jsonl")
    refusals = log.of(ev.AgentReply)
    assert [r.status for r in refusals] == [400, 400, 400] and not log.of(ev.ModelCall)
    assert len(log.of(ev.ContextOverflow)) == 3
    for reply in refusals:  # the harness's own error table takes each for what it is
        assert error_table.kind_of(reply.status, reply.body).kind == "context_overflow"
    # Claude Code's own parse of the text (docs/agents.md)
    import re

    m = re.search(
        r"prompt is too long[^0-9]*(\d+)\s*tokens?\s*>\s*(\d+)",
        json.loads(refusals[0].body)["error"]["message"],
    )
    assert m is not None and (int(m.group(1)), int(m.group(2))) == (tokens, 200)


def test_relative_window_counts_above_the_agents_overhead(tmp_path):
    system = "fixed overhead " * 300
    with _proxy(tmp_path, window=100, relative=True) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0)
        client.messages.create(
            model="m",
            max_tokens=10,
            system=system,
            tools=[BASH],
            messages=[{"role": "user", "content": "go"}],
        )
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(
                model="m",
                max_tokens=10,
                system=system,
                tools=[BASH],
                messages=[{"role": "user", "content": "go " * 200}],
            )
        overhead = proxy.overhead
    first, second = Log.from_path(tmp_path / "events.jsonl").of(ev.AgentRequest)
    assert overhead > 300 and first.overhead == second.overhead == overhead
    assert first.window == second.window == overhead + 100 and first.tokens <= first.window < second.tokens


def test_unix_socket_serves_the_same_api(tmp_path):
    sock = tmp_path / "m.sock"
    with _proxy(tmp_path, socket_path=sock, tcp=False) as proxy:
        assert sock.stat().st_mode & 0o777 == 0o666

        class UnixConnection(http.client.HTTPConnection):
            def connect(self):
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(str(sock))

        conn = UnixConnection("localhost")
        body = json.dumps(
            {"model": "m", "max_tokens": 50, "tools": [BASH], "messages": [{"role": "user", "content": "hi"}]}
        )
        conn.request("POST", "/v1/messages?beta=true", body, {"content-type": "application/json"})
        reply = json.loads(conn.getresponse().read())
        assert reply["content"][0]["input"] == {"command": "ls -la"} and proxy.requests == 1
    assert not sock.exists()
    _verified(tmp_path)


def test_tampered_body_fails_verify(tmp_path):
    with _proxy(tmp_path) as proxy:
        anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0).messages.create(
            model="m", max_tokens=10, tools=[BASH], messages=[{"role": "user", "content": "hi"}]
        )
    path = tmp_path / "events.jsonl"
    lines = path.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if '"agent_request"' in line)
    record = json.loads(lines[i])
    record["body"] = record["body"].replace("hi", "ho")
    lines[i] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    _, problems = verify(path)
    assert any("agent_request body does not match its sha" in p for p in problems)
    assert any("does not decode to the logged context" in p for p in problems)


class _Failing:
    model_id = "failing"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def complete(self, messages, tools, **kw):
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "reason"),
    [(ProviderError("503 after retries"), "provider_error"), (RuntimeError("bug"), "harness_error")],
)
def test_a_failing_model_is_infrastructure_never_the_agents(tmp_path, exc, reason):
    with ModelProxy(_Failing(exc), _log(tmp_path), seed=SEED) as proxy:
        with pytest.raises(anthropic.InternalServerError):
            anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0).messages.create(
                model="m", max_tokens=10, tools=[BASH], messages=[{"role": "user", "content": "hi"}]
            )
        assert proxy.infra_failure is not None and proxy.infra_failure.startswith(reason)


def test_a_crash_of_the_proxy_itself_is_the_harness_error_never_the_agents(tmp_path, monkeypatch):
    from bench.proxy import api

    def broken(*args, **kwargs):
        raise RuntimeError("a codec bug")

    monkeypatch.setattr(api.Anthropic, "reply", staticmethod(broken))
    with _proxy(tmp_path) as proxy:
        with pytest.raises(anthropic.InternalServerError):
            anthropic.Anthropic(base_url=proxy.url, api_key="x", max_retries=0).messages.create(
                model="m", max_tokens=10, tools=[BASH], messages=[{"role": "user", "content": "hi"}]
            )
        assert proxy.infra_failure is not None and proxy.infra_failure.startswith("harness_error")


def test_bad_request_body_is_answered_400_and_recorded(tmp_path):
    with _proxy(tmp_path) as proxy:
        conn = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))
        conn.request("POST", "/v1/chat/completions", b"[1, 2", {"content-type": "application/json"})
        assert conn.getresponse().status == 400
        assert proxy.infra_failure is None
    log = Log.from_path(tmp_path / "events.jsonl")
    assert log.of(ev.AgentRequest)[0].body == "[1, 2" and log.of(ev.AgentReply)[0].status == 400


def test_threads_main_side_subagent_compaction():
    from bench.proxy.threads import Threads

    tools = (ToolSpec("Bash", "", {}),)
    th = Threads()
    main = (Message(role="system", content="main"), Message(role="user", content="go"))
    assert th.classify(main, tools) == "main"
    assert th.classify(main, ()) == "side"  # a title request offers no tools
    assert (
        th.classify((Message(role="system", content="explore"), Message(role="user", content="x")), tools)
        == "subagent"
    )
    assert (
        th.classify(
            (*main, Message(role="user", content="CRITICAL: Respond with TEXT ONLY. Summarise")), tools
        )
        == "compaction"
    )
    assert th.classify(main, tools, signal="compaction") == "compaction"
    assert th.classify(main, tools) == "main"


def test_a_main_prompt_with_more_after_it_is_still_the_main_thread():
    """Measured: Codex 0.171.0 appends its skills' instructions to its developer prompt from its
    second process on (each step a `codex exec resume`); its main thread stays the main thread,
    while another prompt, or none after a prompt, is a subagent's."""
    from bench.proxy.threads import Threads

    tools, th = (ToolSpec("exec_command", "", {}),), Threads()
    prompt = Message(role="system", content="You are Codex")
    assert th.classify((prompt, Message(role="user", content="step 1")), tools) == "main"
    grown = (
        prompt,
        Message(role="system", content="<skills_instructions> ..."),
        Message(role="user", content="2"),
    )
    assert th.classify(grown, tools) == "main"
    assert th.classify((Message(role="system", content="You are a reviewer"), grown[-1]), tools) == "subagent"
    assert th.classify((Message(role="user", content="no prompt"),), tools) == "subagent"
    # after a compaction Codex's skills' list is longer: its base instructions and its `turn` say main
    codex = Threads()
    assert (
        codex.classify((prompt, Message(role="system", content="skills: a (short)"), grown[-1]), tools)
        == "main"
    )
    changed = (
        prompt,
        Message(role="system", content="skills: a (its longer text)"),
        Message(role="user", content="3"),
    )
    assert (
        codex.classify(changed, tools, signal="turn") == "main"
        and codex.classify(changed, tools) == "subagent"
    )
    assert (
        codex.classify((Message(role="system", content="Other"), *changed[1:]), tools, signal="turn")
        == "subagent"
    )
    bare = Threads()  # a main thread without a prompt: only another request without one is main
    assert bare.classify((Message(role="user", content="x"),), tools) == "main"
    assert bare.classify((prompt, Message(role="user", content="y")), tools) == "subagent"


def test_claude_codes_billing_header_is_not_its_system_prompt():
    """Measured: Claude Code's first system block's version suffix changes after its own compaction;
    its main thread stays the main thread."""
    from bench.proxy.threads import Threads

    tools, th = (ToolSpec("Bash", "", {}),), Threads()

    def request(header: str) -> tuple[Message, ...]:
        return (
            Message(role="system", content=f"x-anthropic-billing-header: cc_version=2.1.197.{header};"),
            Message(role="system", content="You are Claude Code"),
            Message(role="user", content="go"),
        )

    assert th.classify(request("31d"), tools) == "main" and th.classify(request("f9d"), tools) == "main"


def test_the_gate_counts_every_acting_request_and_a_limit_ends_the_turn(tmp_path):
    """A player whose agent calls the model out of its sight (Claude Code in the sandbox, where any
    process can reach the socket) counts each request that offers tools, main thread or another
    system prompt's, and a limit reached is a 400 naming it, on the record; a side call is no turn."""
    asked: list[str] = []

    def gate() -> int:
        asked.append("turn")
        if len(asked) > 2:
            raise RuntimeError("2 turns used in this step")
        return len(asked) - 1

    def post(conn, system: str, tools: bool) -> tuple[int, str]:
        body = {
            "model": "m",
            "max_tokens": 100,
            "system": system,
            "messages": [{"role": "user", "content": "go"}],
            **({"tools": [BASH]} if tools else {}),
        }
        conn.request("POST", "/v1/messages", json.dumps(body).encode(), {"content-type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read().decode()

    proxy = _proxy(tmp_path)
    proxy.gate = gate
    with proxy:
        conn = http.client.HTTPConnection("127.0.0.1", int(proxy.url.rsplit(":", 1)[1]))
        assert post(conn, "main", True)[0] == 200
        assert post(conn, "main", False)[0] == 200  # a side call (a title): not an acting turn
        assert post(conn, "another prompt", True)[0] == 200  # a subagent's turn is counted too
        status, body = post(conn, "another prompt", True)
        assert status == 400 and "ctxbench ended this turn: 2 turns used in this step" in body
    assert len(asked) == 3 and proxy.counts["stopped"] == 1
    log = _verified(tmp_path)
    assert [r.thread for r in log.of(ev.AgentRequest)] == ["main", "side", "subagent", "subagent"]
    assert len(log.of(ev.ModelCall)) == 3 and log.of(ev.AgentReply)[-1].status == 400
