"""Fault injection in the loopback server, each handled as specified, through both SDKs:
429 + retry-after (honoured), 500, a response slower than the timeout, a reply cut at
max_tokens (returned, never retried or raised), malformed JSON, a stream cut short, malformed
tool-call JSON from the model; retries bounded, then one ProviderError. Plus the transport
policy's pieces (retry-after parsing, classification, the concurrency slots)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from bench.core.toolspecs import TOOLS
from bench.providers.base import ProviderError
from bench.providers.http.transport import Failure, Slots, backoff_s, classify, parse_retry_after
from bench.serve.server import LoopbackServer
from tests.helpers.serve_support import CONVERSATION, KEYS, KINDS, ScriptedBackend, Sleeps, make

pytestmark = pytest.mark.usefixtures("api_keys")  # tests/helpers/fixtures.py


MSGS = CONVERSATION[:2]


def _call(kind, srv, sleep=None, **over):
    p = make(kind, srv, sleep=sleep if sleep is not None else Sleeps(), **over)
    try:
        return p.complete(MSGS, TOOLS, max_tokens=256, seed=1, cache_breakpoint=2)
    finally:
        p.close()


@pytest.mark.parametrize("kind", KINDS)
def test_429_twice_then_success_honours_retry_after(kind, api_keys):
    backend, sleeps = ScriptedBackend(), Sleeps()
    with LoopbackServer(backend, faults=["429:2"], retry_after_s=0.25) as srv:
        c = _call(kind, srv, sleeps)
    assert sleeps == [0.25, 0.25]  # exactly the server's retry-after, not our backoff
    assert c.stop_reason == "tool_use" and c.extra["attempts"] == 3 and c.extra["retry_wait_s"] == 0.5
    assert len(backend.calls) == 1  # failed attempts never reached the model


@pytest.mark.parametrize("kind", KINDS)
def test_429_past_the_retry_budget_is_one_provider_error(kind, api_keys):
    backend = ScriptedBackend()
    with LoopbackServer(backend, faults=["429"], retry_after_s=0.01) as srv:
        with pytest.raises(ProviderError, match=r"rate_limit after 3 attempt\(s\)"):
            _call(kind, srv, max_retries=2)
        assert [f for _, f in srv.calls] == ["429"] * 3
    assert backend.calls == []


@pytest.mark.parametrize("kind", KINDS)
def test_500_is_retried_with_backoff(kind, api_keys):
    sleeps = Sleeps()
    with LoopbackServer(ScriptedBackend(), faults=["500:1"]) as srv:
        c = _call(kind, srv, sleeps, backoff_s=0.01)
    assert c.extra["attempts"] == 2 and len(sleeps) == 1 and 0.005 <= sleeps[0] <= 0.01


@pytest.mark.parametrize("kind", KINDS)
def test_slow_response_past_the_timeout_is_retried(kind, api_keys):
    with LoopbackServer(ScriptedBackend(), faults=["slow:1"], slow_s=5.0) as srv:
        t0 = time.monotonic()
        c = _call(kind, srv, timeout_s=0.4)
        elapsed = time.monotonic() - t0
    assert c.extra["attempts"] == 2 and c.stop_reason == "tool_use"
    assert 0.3 < elapsed < 4.5  # one timeout, not the server's 5 s stall (wide: a loaded CI host)


@pytest.mark.parametrize("kind", KINDS)
def test_slow_every_time_ends_in_a_timeout_provider_error(kind, api_keys):
    with LoopbackServer(ScriptedBackend(), faults=["slow"], slow_s=5.0) as srv:
        with pytest.raises(ProviderError, match=r"timeout after 2 attempt\(s\)"):
            _call(kind, srv, timeout_s=0.3, max_retries=1)


@pytest.mark.parametrize("kind", KINDS)
def test_reply_cut_at_max_tokens_is_returned_as_max_tokens_not_retried(kind, api_keys):
    backend = ScriptedBackend()
    with LoopbackServer(backend, faults=["truncate:1"]) as srv:
        c = _call(kind, srv)
    assert c.stop_reason == "max_tokens" and c.tool_calls == () and c.usage.output == 256
    assert c.extra["attempts"] == 1 and len(backend.calls) == 1


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fault", ["malformed", "cut"])
def test_malformed_or_cut_responses_are_retried_then_a_provider_error(kind, fault, api_keys):
    with LoopbackServer(ScriptedBackend(), faults=[f"{fault}:1"]) as srv:
        assert _call(kind, srv).extra["attempts"] == 2
    with LoopbackServer(ScriptedBackend(), faults=[fault]) as srv:
        with pytest.raises(ProviderError, match=r"(malformed_response|connection) after 3 attempt\(s\)"):
            _call(kind, srv)


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_tool_json_from_the_model_is_an_error_stop_not_a_retry(kind, api_keys):
    with LoopbackServer(ScriptedBackend(), faults=["bad_tool_json:1"]) as srv:
        c = _call(kind, srv)
    assert c.stop_reason == "error" and c.extra["attempts"] == 1
    assert '{"path": "a.py"' in c.content and c.extra["raw_tool_calls"][0]["name"] == "read_file"


@pytest.mark.parametrize("kind", KINDS)
def test_client_errors_are_not_retried_and_never_show_the_key(kind, api_keys, monkeypatch):
    monkeypatch.setenv("LOOPBACK_KEY", "a-different-key-456")
    sleeps = Sleeps()
    with LoopbackServer(ScriptedBackend(), key_env="LOOPBACK_KEY") as srv:
        with pytest.raises(ProviderError, match=r"http_401 after 1 attempt\(s\)") as err:
            _call(kind, srv, sleeps)
    assert sleeps == [] and KEYS[kind] not in str(err.value)


def test_fault_by_request_header(api_keys):
    with LoopbackServer(ScriptedBackend()) as srv:
        p = make("openai", srv, sleep=Sleeps(), max_retries=0)
        p._client = p._client.with_options(default_headers={"x-ctxbench-fault": "500"})
        with pytest.raises(ProviderError, match="http_500"):
            p.complete(MSGS, TOOLS, max_tokens=64, seed=0)


def test_retry_after_parsing_and_backoff():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert (
        55
        < parse_retry_after(
            {"retry-after": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))}
        )
        <= 60
    )
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after(None) is None
    assert backoff_s(0, 1.0, Failure("rate_limit", True, 3600.0)) == 120.0  # capped
    assert all(0.5 * 4 <= backoff_s(2, 1.0, Failure("http_500", True)) <= 4 for _ in range(20))


def test_classify():
    class Status(Exception):
        def __init__(self, code):
            self.status_code = code
            self.response = type("R", (), {"headers": {"retry-after": "3"}})()

    assert classify(Status(429)) == Failure("rate_limit", True, 3.0)
    assert classify(Status(503)).retryable and classify(Status(408)).retryable
    assert not classify(Status(400)).retryable and not classify(Status(401)).retryable
    assert classify(TimeoutError()).kind == "timeout"
    assert classify(ConnectionResetError()).kind == "connection"
    assert not classify(KeyError("x")).retryable


def test_slots_limit_threads():
    slots, lock, now, peak = Slots(f"test-threads-{os.getpid()}", 2), threading.Lock(), [0], [0]

    def work():
        with slots.hold():
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            time.sleep(0.05)
            with lock:
                now[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert peak[0] == 2


def test_slots_are_shared_across_processes(tmp_path, monkeypatch):
    """What joblib's loky workers see: one machine-wide limit per (provider, base_url, model)."""
    monkeypatch.setenv("CTXBENCH_SLOT_DIR", str(tmp_path))
    key = "test-procs"
    child = (
        "import sys, time\nfrom bench.providers.http.transport import Slots\n"
        f"with Slots({key!r}, 1).hold():\n    print('held', flush=True)\n    time.sleep(0.6)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        with Slots(key, 1).hold():
            waited = time.monotonic() - t0
    finally:
        proc.wait(timeout=10)
    assert waited > 0.3
