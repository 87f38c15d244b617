"""OpenAIProvider: wire mapping (both directions), usage normalisation (prompt tokens include
cached ones), finish reasons, streamed tool calls, compatible endpoints, the SDK path."""

from __future__ import annotations

import json

import pytest

from bench.core.toolspecs import TOOLS
from bench.core.types import Usage
from bench.providers.http.config import MissingApiKeyError
from bench.providers.http.transport import TransientError
from bench.providers.openai import OpenAIProvider
from bench.providers.wire import openai as ow
from bench.serve.server import LoopbackServer
from tests.helpers.serve_support import CONVERSATION, KEYS, ScriptedBackend, make, model_cfg

pytestmark = pytest.mark.usefixtures("api_keys")  # tests/helpers/fixtures.py


def test_round_trip_is_exact():
    assert ow.from_wire({"messages": ow.to_wire(CONVERSATION)}) == list(CONVERSATION)


def test_wire_shape():
    wire = ow.to_wire(CONVERSATION)
    assert [d["role"] for d in wire] == [m.role for m in CONVERSATION]
    call = wire[2]
    assert call["content"] is None
    assert call["tool_calls"][0] == {
        "id": "call_a",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }
    assert wire[3] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": '<file path="a.py" sha="abc">\nx = 1\n</file>',
    }  # no `name` on tool messages
    assert json.loads(wire[6]["tool_calls"][0]["function"]["arguments"])["replace"] == "x = 2 # ünï"
    assert ow.tools_to_wire(TOOLS[:1])[0]["function"]["parameters"]["required"] == ["path"]


@pytest.mark.parametrize(
    "wire_usage,expected",
    [
        # OpenAI: prompt_tokens INCLUDES cached_tokens
        (
            {"prompt_tokens": 1000, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 768}},
            Usage(input=232, output=50, cache_read=768, cache_write=0),
        ),
        (
            {
                "prompt_tokens": 1000,
                "completion_tokens": 50,
                "prompt_tokens_details": {"cached_tokens": 768, "cache_write_tokens": 100},
            },
            Usage(input=132, output=50, cache_read=768, cache_write=100),
        ),
        (
            {"prompt_tokens": 1000, "completion_tokens": 5, "prompt_tokens_details": None},  # no cache info
            Usage(input=1000, output=5),
        ),
        (
            {
                "prompt_tokens": 1000,
                "completion_tokens": 5,
                "prompt_cache_hit_tokens": 640,  # DeepSeek
                "prompt_cache_miss_tokens": 360,
            },
            Usage(input=360, output=5, cache_read=640),
        ),
        (
            {"prompt_tokens": 1000, "completion_tokens": 5, "cached_tokens": 512},  # Moonshot / Kimi
            Usage(input=488, output=5, cache_read=512),
        ),
    ],
)
def test_usage_is_normalised_to_anthropic_style(wire_usage, expected):
    u = ow.usage_from_wire(wire_usage)
    assert u == expected
    assert u.prompt == wire_usage["prompt_tokens"]


def _chunks(deltas, finish="tool_calls", usage=None):
    for d in deltas:
        yield {"id": "c", "model": "gpt-test", "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
    yield {"id": "c", "model": "gpt-test", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    if usage is not False:
        yield {
            "id": "c",
            "model": "gpt-test",
            "choices": [],
            "usage": usage
            or {
                "prompt_tokens": 300,
                "completion_tokens": 20,
                "prompt_tokens_details": {"cached_tokens": 256},
            },
        }


def _fold(chunks, estimate=lambda: Usage(input=1, output=1)):
    fed: list = []
    acc = ow.ChunkAccumulator(0.0, lambda: float(len(fed)))
    for c in chunks:
        fed.append(c)
        acc.feed(c)
    return acc.result(estimate)


def test_streamed_tool_calls_are_assembled_and_usage_comes_from_the_last_chunk():
    res = _fold(
        _chunks(
            [
                {"role": "assistant", "content": ""},
                {"content": "Reading."},
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "read_file", "arguments": ""},
                        }
                    ]
                },
                {"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]},
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_2",
                            "type": "function",
                            "function": {"name": "grep", "arguments": '{"pattern": "x"}'},
                        }
                    ]
                },
                {"tool_calls": [{"index": 0, "function": {"arguments": ' "a.py"}'}}]},
            ]
        )
    )
    assert res.content == "Reading." and res.stop_reason == "tool_use" and res.model == "gpt-test"
    assert [(c.id, c.name, c.args) for c in res.tool_calls] == [
        ("call_1", "read_file", {"path": "a.py"}),
        ("call_2", "grep", {"pattern": "x"}),
    ]
    assert res.usage == Usage(input=44, output=20, cache_read=256)
    assert res.ttft_s == 2.0  # the first content delta


@pytest.mark.parametrize(
    "finish,ours",
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("tool_calls", "tool_use"),
        ("content_filter", "refusal"),
        ("function_call", "tool_use"),
        ("weird", "error"),
    ],
)
def test_finish_reasons_are_mapped(finish, ours):
    assert _fold(_chunks([{"content": "hi"}], finish=finish)).stop_reason == ours


def test_stop_after_tool_calls_counts_as_tool_use():  # vLLM/Ollama sometimes say "stop"
    res = _fold(
        _chunks(
            [
                {
                    "tool_calls": [
                        {"index": 0, "id": "t", "function": {"name": "run", "arguments": '{"command": "ls"}'}}
                    ]
                }
            ],
            finish="stop",
        )
    )
    assert res.stop_reason == "tool_use" and res.tool_calls[0].args == {"command": "ls"}


def test_malformed_tool_arguments_are_an_error_stop_with_the_raw_text():
    res = _fold(
        _chunks(
            [
                {
                    "tool_calls": [
                        {"index": 0, "id": "t", "function": {"name": "run", "arguments": '{"command": ls'}}
                    ]
                }
            ]
        )
    )
    assert res.stop_reason == "error" and res.tool_calls == ()
    assert '{"command": ls' in res.content and res.extra["raw_tool_calls"][0]["name"] == "run"


def test_length_with_partial_tool_call_stays_max_tokens():
    res = _fold(
        _chunks(
            [{"tool_calls": [{"index": 0, "id": "t", "function": {"name": "run", "arguments": '{"comm'}}]}],
            finish="length",
        )
    )
    assert res.stop_reason == "max_tokens" and res.tool_calls == ()


def test_no_finish_reason_is_transient_and_missing_usage_is_estimated():
    with pytest.raises(TransientError):
        _fold([{"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]}])
    res = _fold(
        _chunks([{"content": "hi"}], finish="stop", usage=False), estimate=lambda: Usage(input=7, output=1)
    )
    assert res.usage == Usage(input=7, output=1) and res.extra["usage_estimated"] is True


def test_complete_through_the_sdk_and_server(api_keys):
    backend = ScriptedBackend()
    msgs = CONVERSATION[:2]
    with LoopbackServer(backend) as srv:
        p = make("openai", srv)
        c = p.complete(msgs, TOOLS, max_tokens=512, seed=17, cache_breakpoint=2)
        p.close()
    sent, seed, bp = backend.calls[0]
    assert sent == msgs and seed == 17 and bp is None  # OpenAI has no explicit cache marks
    # the server sent prompt_tokens = 1400 incl. 1024 cached and 256 written; back to Anthropic style:
    assert c.usage == Usage(input=120, output=30, cache_read=1024, cache_write=256)
    assert c.stop_reason == "tool_use" and c.tool_calls[0].name == "read_file"
    assert c.cost_usd == pytest.approx((120 * 2.0 + 30 * 10.0 + 1024 * 0.2 + 256 * 2.5) / 1e6)


def test_each_call_of_a_trial_samples_with_a_seed_of_its_own(api_keys):
    # One seed for every call made a retry after a nudge repeat the last reply word for word on a
    # real server (issue 21, defect 8); the trial's own seed still travels, as `user`.
    seeds = []
    for _ in range(2):  # a rerun of the trial sends the same sequence
        p = OpenAIProvider.from_config(
            model_cfg("openai", base_url="http://127.0.0.1:1/v1", api_key_env=None)
        )
        bodies = [p._build(CONVERSATION[:2], TOOLS, 300, 5, None) for _ in range(3)]
        assert {b["user"] for b in bodies} == {"seed-5"}
        seeds.append([b["seed"] for b in bodies])
        p.close()
    assert len(set(seeds[0])) == 3 and seeds[0] == seeds[1]


def test_a_compatible_server_is_asked_what_it_serves(api_keys):
    with LoopbackServer(ScriptedBackend()) as srv:
        p = make("openai", srv)
        assert p.describe_server() == "sim"  # the loopback server's /v1/models
        p.close()
    gone = OpenAIProvider.from_config(model_cfg("openai", base_url="http://127.0.0.1:9/v1", api_key_env=None))
    assert gone.describe_server() == ""  # nothing listening: no tag, no failure
    official = OpenAIProvider.from_config(model_cfg("openai", base_url=None))
    assert official.describe_server() == ""  # OpenAI's own endpoint: the model id says it


def test_request_body_official_vs_compatible_endpoint(api_keys):
    official = OpenAIProvider.from_config(model_cfg("openai", base_url=None))
    body = official._build(CONVERSATION[:2], TOOLS, 300, 5, 2)
    assert body["max_completion_tokens"] == 300 and "max_tokens" not in body
    assert body["user"] == "seed-5" and body["stream_options"] == {"include_usage": True}
    assert official._client.max_retries == 0 and official._client.api_key == KEYS["openai"]
    local = OpenAIProvider.from_config(
        model_cfg("openai", base_url="http://127.0.0.1:11434/v1", api_key_env=None)
    )
    assert local._build(CONVERSATION[:2], (), 300, 5, None)["max_tokens"] == 300
    assert local._client.api_key == "unused"  # a keyless local endpoint (Ollama, vLLM, llama.cpp)


def test_missing_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match="export OPENAI_API_KEY="):
        OpenAIProvider.from_config(model_cfg("openai"))
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match="DEEPSEEK_API_KEY"):
        OpenAIProvider.from_config({**model_cfg("openai"), "api_key_env": "DEEPSEEK_API_KEY"})
