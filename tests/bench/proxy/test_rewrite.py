"""The proxy's rewrites of an agent's requests (bench/proxy/rewrite.py): the model sees the
rewritten request, the agent's own bytes stay on the record with the rewrite's label, and verify
rebuilds what the model saw from the two; a label that is removed or changed does not verify.
Only the main thread is rewritten; `none` records nothing new."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from bench.config import ConfigError
from bench.eventlog.verify import verify
from bench.eventlog.writer import EventLog
from bench.providers.scripted import ScriptedProvider
from bench.proxy.rewrite import Rewrite, parse_rewrite
from bench.proxy.server import ModelProxy
from ctxlog import events as ev
from ctxlog.reader import Log

SEED = 7002
TOOL = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]


class Seen:
    """The scripted model, keeping what it was sent."""

    model_id = "scripted"

    def __init__(self) -> None:
        self.inner = ScriptedProvider([[{"name": "bash", "args": {"command": "ls"}}]] * 8, when_done="stop")
        self.sent: list[tuple] = []

    def complete(self, messages, tools, **kw):
        self.sent.append(tuple(messages))
        return self.inner.complete(messages, tools, **kw)


def _conversation(turns: int) -> list[dict]:
    msgs: list[dict] = [
        {"role": "system", "content": "you are an agent"},
        {"role": "user", "content": "[task:x] go"},
    ]
    for k in range(turns):
        msgs += [
            {
                "role": "assistant",
                "content": f"turn {k}",
                "tool_calls": [
                    {
                        "id": f"c{k}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"output {k}\n" + "line\n" * 200},
        ]
    return msgs


def _post(tmp_path: Path, rewrite: Rewrite | None, messages: list[dict], tools=TOOL) -> tuple[Seen, Log]:
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
    model = Seen()
    with ModelProxy(model, log, seed=SEED, rewrite=rewrite) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="x", max_retries=0)
        client.chat.completions.create(model="m", messages=messages, **({"tools": tools} if tools else {}))
    log.close()
    return model, Log.from_path(tmp_path / "events.jsonl")


def test_masking_at_the_proxy_the_model_sees_placeholders_the_record_keeps_the_agents_bytes(tmp_path):
    messages = _conversation(3)
    model, log = _post(tmp_path, parse_rewrite({"name": "masking", "keep_recent_turns": 1}), messages)
    (seen,) = model.sent
    tools = [m for m in seen if m.role == "tool"]
    assert [m.content for m in tools[:2]] == ["[bash output omitted: 202 lines]"] * 2
    assert tools[2].content.startswith("output 2")  # the newest turn's result stays verbatim
    (request,) = log.of(ev.AgentRequest)
    assert request.rewrite == "masking:keep_recent_turns=1"
    assert json.loads(request.body)["messages"] == messages  # the agent's own request, as it sent it
    assert request.tokens > log.calls[0].context.tokens  # its size, and the smaller one the model got
    assert [m["content"] for m in log.calls[0].messages if m["role"] == "tool"][0].startswith(
        "[bash output omitted"
    )
    rebuilt, problems = verify(tmp_path / "events.jsonl")
    assert (rebuilt, problems) == (1, [])


@pytest.mark.parametrize("label", [None, "masking:keep_recent_turns=3"])
def test_a_removed_or_changed_label_does_not_verify(tmp_path, label):
    _post(tmp_path, parse_rewrite({"name": "masking", "keep_recent_turns": 1}), _conversation(3))
    path = tmp_path / "events.jsonl"
    lines = path.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if '"agent_request"' in line)
    record = json.loads(lines[i])
    if label is None:
        del record["rewrite"]
    else:
        record["rewrite"] = label
    lines[i] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    _, problems = verify(path)
    assert any("does not decode to the logged context" in p for p in problems), problems


def test_trim_drops_the_oldest_turns_keeps_the_task_and_says_so(tmp_path):
    messages = _conversation(6)
    model, log = _post(tmp_path, parse_rewrite({"name": "trim", "budget_tokens": 1200}), messages)
    (seen,) = model.sent
    assert [m.content for m in seen[:2]] == ["you are an agent", "[task:x] go"]
    assert len(seen) < len(messages) and seen[-1].content.startswith("output 5")
    assert seen[2].role == "assistant"  # whole turns: never a tool result without its call
    (cut,) = log.of(ev.ContextTruncation)
    assert (
        cut.dropped_messages == len(messages) - len(seen)
        and cut.tokens_after <= 1200 + 200 < cut.tokens_before
    )
    assert verify(tmp_path / "events.jsonl")[1] == []


def test_only_the_main_thread_is_rewritten(tmp_path):
    """A request without tools is a side call (a title): it goes to the model as the agent sent it."""
    messages = _conversation(3)
    model, log = _post(
        tmp_path, parse_rewrite({"name": "masking", "keep_recent_turns": 0}), messages, tools=None
    )
    (seen,) = model.sent
    assert all(not m.content.startswith("[bash output omitted") for m in seen)
    (request,) = log.of(ev.AgentRequest)
    assert request.thread == "side" and request.rewrite is None


def test_none_records_nothing_new(tmp_path):
    assert parse_rewrite({"name": "none", "keep_recent_turns": 10, "budget_tokens": 0}) is None
    _, log = _post(tmp_path, None, _conversation(2))
    (request,) = log.of(ev.AgentRequest)
    assert "rewrite" not in request.fields() and not log.of(ev.ContextTruncation)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"name": "summarise"}, "agent.proxy_rewrite.name='summarise' is not one of none, masking, trim"),
        ({"name": "trim"}, "agent.proxy_rewrite.budget_tokens must be > 0 for trim"),
        (
            {"name": "masking", "keep_recent_turns": -1},
            "agent.proxy_rewrite.keep_recent_turns must be an integer >= 0",
        ),
        ({"name": "masking", "keep": 2}, "agent.proxy_rewrite.keep: unknown key"),
    ],
)
def test_bad_rewrite_is_one_line(raw, says):
    with pytest.raises(ConfigError) as err:
        parse_rewrite(raw)
    assert str(err.value).startswith(says) and "\n" not in str(err.value)


def test_a_label_reads_back_to_its_rewrite():
    for rewrite in (Rewrite("masking", keep_recent_turns=4), Rewrite("trim", budget_tokens=900)):
        assert Rewrite.from_label(rewrite.label) == rewrite
    with pytest.raises(ValueError):
        Rewrite.from_label("masking:budget_tokens=3")
