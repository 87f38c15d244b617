"""AnthropicProvider: wire mapping (both directions), cache_control placement, usage and stop
mapping, malformed tool JSON, the SDK path against the loopback server, config and keys."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench.core.toolspecs import TOOLS
from bench.core.types import Message, Usage, request_hash
from bench.providers.anthropic import AnthropicProvider
from bench.providers.http.config import MissingApiKeyError, ModelConfigError
from bench.providers.http.transport import TransientError
from bench.providers.wire import anthropic as aw
from bench.serve.server import LoopbackServer
from tests.helpers.serve_support import CONVERSATION, KEYS, ScriptedBackend, make, model_cfg

pytestmark = pytest.mark.usefixtures("api_keys")  # tests/helpers/fixtures.py


def test_round_trip_is_exact_including_cache_breakpoint():
    for bp in (None, 1, 2, 4, 5, len(CONVERSATION)):
        system, wire = aw.to_wire(CONVERSATION, bp)
        back, mark = aw.from_wire({"system": system, "messages": wire})
        assert back == list(CONVERSATION)
        assert mark == bp


def test_wire_shape_system_param_merged_tool_results_and_alternation():
    system, wire = aw.to_wire(CONVERSATION, cache_breakpoint=2)
    assert system == [{"type": "text", "text": "You are careful."}]
    assert [t["role"] for t in wire] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    # the stable prefix (system + task) ends on the task's block: one breakpoint there
    assert wire[0]["content"] == [
        {"type": "text", "text": "[task:toy/1] Do the thing.", "cache_control": {"type": "ephemeral"}}
    ]
    assert [b["type"] for b in wire[1]["content"]] == ["tool_use", "tool_use"]  # no empty text block
    assert wire[1]["content"][1]["input"] == {"pattern": "def "}
    # two consecutive tool results and the next user message form ONE user turn
    assert [b["type"] for b in wire[2]["content"]] == ["tool_result", "tool_result", "text"]
    assert wire[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "call_a",
        "content": '<file path="a.py" sha="abc">\nx = 1\n</file>',
    }
    assert wire[6]["content"][0]["text"].startswith(aw.SYSTEM_PREFIX)  # a late system message
    marks = [b for t in wire for b in t["content"] if "cache_control" in b]
    assert len(marks) == 1


def test_breakpoint_on_system_or_tool_result():
    system, _ = aw.to_wire(CONVERSATION, cache_breakpoint=1)
    assert system[0]["cache_control"] == {"type": "ephemeral"}
    _, wire = aw.to_wire(CONVERSATION, cache_breakpoint=4)
    assert wire[2]["content"][0]["cache_control"] == {"type": "ephemeral"}


def _events(blocks, stop="tool_use", usage=None):
    usage = usage or {
        "input_tokens": 100,
        "cache_read_input_tokens": 2000,
        "cache_creation_input_tokens": 300,
    }
    yield {
        "type": "message_start",
        "message": {"model": "claude-test", "usage": {**usage, "output_tokens": 1}},
    }
    for i, (start, deltas) in enumerate(blocks):
        yield {"type": "content_block_start", "index": i, "content_block": start}
        for d in deltas:
            yield {"type": "content_block_delta", "index": i, "delta": d}
        yield {"type": "content_block_stop", "index": i}
    yield {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 57}}
    yield {"type": "message_stop"}


def _fold(events):
    fed: list = []
    acc = aw.StreamAccumulator(0.0, lambda: float(len(fed)))  # "time" = events received so far
    for e in events:
        fed.append(e)
        acc.feed(e)
    return acc.result()


def test_usage_maps_one_to_one_and_tool_json_is_assembled_from_deltas():
    res = _fold(
        _events(
            [
                (
                    {"type": "text", "text": ""},
                    [{"type": "text_delta", "text": "Let me "}, {"type": "text_delta", "text": "look."}],
                ),
                (
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
                    [
                        {"type": "input_json_delta", "partial_json": '{"pa'},
                        {"type": "input_json_delta", "partial_json": 'th": "a.py"}'},
                    ],
                ),
            ]
        )
    )
    assert res.usage == Usage(input=100, output=57, cache_read=2000, cache_write=300)
    assert res.content == "Let me look." and res.stop_reason == "tool_use" and res.model == "claude-test"
    assert [(c.id, c.name, c.args) for c in res.tool_calls] == [("toolu_1", "read_file", {"path": "a.py"})]
    assert res.ttft_s == 3.0  # at the first text delta (3rd event), not at message_start


def test_malformed_tool_json_from_the_model_is_an_error_stop_with_the_raw_text():
    res = _fold(
        _events(
            [
                (
                    {"type": "tool_use", "id": "toolu_9", "name": "edit_file", "input": {}},
                    [{"type": "input_json_delta", "partial_json": '{"path": "a.py", "search": '}],
                )
            ]
        )
    )
    assert res.stop_reason == "error" and res.tool_calls == ()
    assert '{"path": "a.py", "search": ' in res.content  # the harness logs content
    assert res.extra["raw_tool_calls"][0]["name"] == "edit_file"


@pytest.mark.parametrize(
    "wire_stop,ours",
    [
        ("end_turn", "end_turn"),
        ("tool_use", "tool_use"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("refusal", "refusal"),
        ("model_context_window_exceeded", "max_tokens"),
        ("pause_turn", "error"),
        ("something_new", "error"),
    ],
)
def test_stop_reasons_are_mapped(wire_stop, ours):
    res = _fold(
        _events([({"type": "text", "text": ""}, [{"type": "text_delta", "text": "hi"}])], stop=wire_stop)
    )
    assert res.stop_reason == ours


def test_a_stream_without_message_stop_is_transient():
    events = list(_events([({"type": "text", "text": ""}, [{"type": "text_delta", "text": "hi"}])]))[:-1]
    with pytest.raises(TransientError):
        _fold(events)


def test_complete_through_the_sdk_and_server(api_keys):
    backend = ScriptedBackend()
    msgs = CONVERSATION[:2]
    with LoopbackServer(backend) as srv:
        p = make("anthropic", srv)
        c = p.complete(msgs, TOOLS, max_tokens=512, seed=4002, cache_breakpoint=2)
        assert p.count_tokens(msgs, TOOLS) == 84
        p.close()
    sent, seed, bp = backend.calls[0]
    # seed via metadata.user_id, breakpoint via cache_control
    assert sent == msgs and seed == 4002 and bp == 2
    assert c.usage == Usage(input=120, output=30, cache_read=1024, cache_write=256)
    assert c.stop_reason == "tool_use" and c.tool_calls[0].args == {"path": "a.py"}
    assert c.request_hash == request_hash(msgs, TOOLS, 512, 4002)
    assert c.model_id == "anthropic-model" and c.extra["attempts"] == 1
    assert c.cost_usd == pytest.approx((120 * 2.0 + 30 * 10.0 + 1024 * 0.2 + 256 * 2.5) / 1e6)
    assert 0 <= c.ttft_s <= c.latency_s


def test_sdk_retries_are_disabled(api_keys):
    p = AnthropicProvider.from_config(model_cfg("anthropic", base_url="http://127.0.0.1:9"))
    assert p._client.max_retries == 0
    assert p._client.api_key == KEYS["anthropic"]


def test_config_errors_name_the_key(api_keys, monkeypatch):
    with pytest.raises(ModelConfigError, match="temperature"):
        AnthropicProvider.from_config({**model_cfg("anthropic"), "temperature": 0.2})
    with pytest.raises(ModelConfigError, match="model.window"):
        AnthropicProvider.from_config({**model_cfg("anthropic"), "window": None})
    with pytest.raises(ModelConfigError, match="model.price.output"):
        AnthropicProvider.from_config(
            {**model_cfg("anthropic"), "price": {"input": 1, "output": -1, "cache_read": 0, "cache_write": 0}}
        )
    with pytest.raises(ModelConfigError, match="api_key_env may be null only"):
        AnthropicProvider.from_config({**model_cfg("anthropic"), "api_key_env": None})
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY is not set"):
        AnthropicProvider.from_config(model_cfg("anthropic"))
    with pytest.raises(MissingApiKeyError, match="MY_CLAUDE_KEY is not set"):
        AnthropicProvider.from_config({**model_cfg("anthropic"), "api_key_env": "MY_CLAUDE_KEY"})
    monkeypatch.setenv("MY_CLAUDE_KEY", "sk-other-0123456789")
    p = AnthropicProvider.from_config({**model_cfg("anthropic"), "api_key_env": "MY_CLAUDE_KEY"})
    assert p._client.api_key == "sk-other-0123456789"


def test_sdks_are_not_imported_with_bench():
    code = (
        "import sys, bench, bench.providers, bench.providers.anthropic, bench.providers.openai, "
        "bench.providers.replay, bench.serve.server, bench.tracking.tracing\n"
        "print(sorted(m for m in ('anthropic', 'openai', 'mlflow') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"


def test_late_system_message_without_prefix_collision():
    msgs = (Message("user", "[task:t/1] go"), Message("system", "note"), Message("user", "more"))
    system, wire = aw.to_wire(msgs)
    assert system == [] and len(wire) == 1
    assert aw.from_wire({"messages": wire})[0] == list(msgs)
