"""The loopback server: a multi-turn tool-use conversation through each SDK gives exactly what the
sim gives directly; conversations are keyed per (task, seed); auth; plain JSON replies;
count_tokens; the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from bench.core.tokens import count_messages, tools_tokens
from bench.core.types import Message
from bench.serve.backend import SimBackend, conversation_key
from bench.serve.server import FaultPlan, LoopbackServer
from tests.helpers.serve_support import KEYS, KINDS, ScriptedBackend, make, toy_backend
from tests.helpers.sim_world import make_task, provider, run

pytestmark = pytest.mark.usefixtures("api_keys")  # tests/helpers/fixtures.py


@pytest.mark.parametrize("kind", KINDS)
def test_same_conversation_through_the_sdk_as_through_the_sim_directly(kind, api_keys):
    task = make_task()
    world0, msgs0, replies0 = run(provider("sim", task), task, seed=5002)
    with LoopbackServer(toy_backend()) as srv:
        p = make(kind, srv)
        world1, msgs1, replies1 = run(p, task, seed=5002)
        p.close()
    assert len(replies0) >= 6 and sum(len(r.tool_calls) for r in replies0) >= 6  # a real multi-turn tool loop
    assert [m.to_dict() for m in msgs1] == [m.to_dict() for m in msgs0]  # incl. tool call ids and arguments
    assert [r.tool_calls for r in replies1] == [r.tool_calls for r in replies0]
    assert [r.usage for r in replies1] == [r.usage for r in replies0]
    assert [r.stop_reason for r in replies1] == [r.stop_reason for r in replies0]
    assert [r.request_hash for r in replies1] == [r.request_hash for r in replies0]
    assert sum(r.usage.cache_read for r in replies1) > 0  # the sim's prefix cache, read back via the wire
    assert world1.files == world0.files


def test_each_task_and_seed_gets_its_own_sim_instance(api_keys):
    backend = toy_backend()
    task = make_task()
    with LoopbackServer(backend) as srv:
        p = make("anthropic", srv)
        for seed in (1, 2, 1):
            run(p, task, seed=seed, max_turns=1)
    assert backend.conversations == 2
    assert conversation_key((Message("system", "x"), Message("user", "[task:fam/3/k=2] hi")), 9) == (
        "fam/3/k=2",
        9,
    )


def _post(url, body, headers=None):
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


ANTHROPIC_BODY = {
    "model": "m",
    "max_tokens": 100,
    "metadata": {"user_id": "seed-3"},
    "system": "sys",
    "messages": [{"role": "user", "content": "[task:toy/1] hi"}],
}
OPENAI_BODY = {
    "model": "m",
    "seed": 3,
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "[task:toy/1] hi"}],
}


def test_key_as_x_api_key_or_bearer_and_401_without(monkeypatch):
    backend = ScriptedBackend()
    with LoopbackServer(backend) as srv:
        assert _post(srv.url + "/v1/messages", ANTHROPIC_BODY)[0] == 401
        status, text = _post(srv.url + "/v1/messages", ANTHROPIC_BODY, {"x-api-key": "k1"})
        assert status == 200 and json.loads(text)["usage"]["cache_read_input_tokens"] == 1024
        status, text = _post(srv.url + "/v1/chat/completions", OPENAI_BODY, {"Authorization": "Bearer k2"})
        assert status == 200
        reply = json.loads(text)
        assert reply["usage"]["prompt_tokens"] == 120 + 1024 + 256
        assert reply["usage"]["prompt_tokens_details"]["cached_tokens"] == 1024
        assert reply["choices"][0]["finish_reason"] == "tool_calls"
        assert json.loads(reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) == {
            "path": "a.py"
        }
    assert [c[1] for c in backend.calls] == [3, 3]  # the seed, from metadata.user_id and from `seed`
    monkeypatch.setenv("LOOPBACK_KEY", "right-key-123")
    with LoopbackServer(ScriptedBackend(), key_env="LOOPBACK_KEY") as srv:
        status, text = _post(
            srv.url + "/v1/chat/completions", OPENAI_BODY, {"Authorization": "Bearer wrong-key-9"}
        )
        assert status == 401 and "wrong-key-9" not in text
        assert (
            _post(srv.url + "/chat/completions", OPENAI_BODY, {"Authorization": "Bearer right-key-123"})[0]
            == 200
        )


def test_count_tokens_and_models(api_keys):
    backend = SimBackend({}, factory=lambda cfg: None)
    msgs = (Message("system", "sys"), Message("user", "[task:toy/1] count me"))
    with LoopbackServer(backend) as srv:
        p = make("anthropic", srv)
        # as the sim's usage counts them
        assert p.count_tokens(msgs) == count_messages(msgs) + tools_tokens(())[1]
        with urllib.request.urlopen(srv.url + "/v1/models", timeout=10) as r:
            assert json.loads(r.read())["data"][0]["id"] == "sim"


def test_requests_are_validated_and_the_server_is_loopback_only():
    with LoopbackServer(ScriptedBackend()) as srv:
        assert (
            _post(srv.url + "/v1/messages", {**ANTHROPIC_BODY, "max_tokens": None}, {"x-api-key": "k"})[0]
            == 400
        )
        assert _post(srv.url + "/v1/nothing", {}, {"x-api-key": "k"})[0] == 404
    with pytest.raises(ValueError, match="loopback only"):
        LoopbackServer(ScriptedBackend(), host="0.0.0.0")
    with pytest.raises(ValueError, match="unknown fault"):
        FaultPlan(["teapot:1"])


def test_fault_plan_counts_then_passes():
    plan = FaultPlan(["429:2", "500:1"])
    assert [plan.next() for _ in range(5)] == ["429", "429", "500", None, None]
    forever = FaultPlan(["slow"])
    assert [forever.next() for _ in range(3)] == ["slow"] * 3


def test_cli_serves_and_injects_faults(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.serve", "--port", "0", "--fault", "500:1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # bounded: the server prints its address first
        assert "loopback server on http://127.0.0.1:" in line
        url = line.split()[4]
        status, text = _post(
            url + "/v1/chat/completions", OPENAI_BODY, {"Authorization": "Bearer " + KEYS["openai"]}
        )
        assert status == 500 and "injected" in text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert KEYS["openai"] not in (proc.stderr.read() if proc.stderr else "")


@pytest.mark.parametrize("kind", KINDS)
def test_ttft_is_measured_on_the_stream(kind):
    """Paced by the reply's own timings (ttft 0.2 s, latency 0.5 s), the provider measures them."""
    with LoopbackServer(ScriptedBackend(), time_scale=1.0) as srv:
        p = make(kind, srv)
        c = p.complete((Message("user", "[task:toy/1] hi"),), (), max_tokens=64, seed=0)
        p.close()
    assert 0.18 < c.ttft_s < 0.45 and 0.45 < c.latency_s < 1.0 and c.latency_s - c.ttft_s > 0.25
