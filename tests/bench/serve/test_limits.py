"""The loopback server's emulated rate limits (bench/serve/limits.py), and the shared limiter
against them through both SDKs: matched limits send no 429; a client without a limit meets
429s with retry-after, pauses, and still gets every call through."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest

from bench.core.tokens import count_messages, tools_tokens
from bench.core.toolspecs import TOOLS
from bench.providers.http.ratelimit import RateLimit, SharedLimiter
from bench.providers.wire import anthropic as aw
from bench.providers.wire import openai as ow
from bench.serve.limits import ProviderLimits, add_arguments, from_args
from bench.serve.server import LoopbackServer
from tests.helpers.serve_support import CONVERSATION, KEYS, KINDS, ScriptedBackend, Sleeps, make, toy_backend

MSGS = CONVERSATION[:2]
SPEED = 20.0  # both clocks run 20 times faster: a minute's allowance refills in 3 s


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_buckets_admit_then_refuse_with_the_wait():
    clock = Clock()
    lim = ProviderLimits(rpm=2, input_tpm=600, output_tpm=60, clock=clock)
    tokens = count_messages(MSGS) + tools_tokens(())[1]  # no tools: their empty list, as usage counts it
    body = {"messages": ow.to_wire(MSGS)}
    assert ProviderLimits.prompt_tokens("openai", body) == tokens
    assert lim.admit("openai", body) is None and lim.admit("openai", body) is None
    assert lim.admit("openai", body) == pytest.approx(30.0)  # the third request: a new one every 30 s
    clock.now += 30
    lim.charge_output(90)  # 30 in debt: 30 s at one a second
    assert lim.admit("openai", body) == pytest.approx(30.0)
    assert lim.stats() == {"admitted": 2, "rejected": 2, "input_tokens": 2 * tokens, "output_tokens": 90}


def test_anthropic_prompt_counts_the_system_prompt_too():
    system, messages = aw.to_wire(MSGS, 2)
    body = {"system": system, "messages": messages}
    assert ProviderLimits.prompt_tokens("anthropic", body) == count_messages(MSGS) + tools_tokens(())[1]


@pytest.mark.parametrize("kind", KINDS)
def test_the_bucket_counts_the_prompt_as_the_replys_usage_does(kind, api_keys):
    # Tool schemas are input tokens too: a bucket that left them out charged 15 % less than the
    # `usage` a client paces itself by, so the 128-trial study reached 0.87 of the limit.
    lim = ProviderLimits(rpm=1000)
    with LoopbackServer(toy_backend(), limits=lim) as srv:
        p = make(kind, srv)
        try:
            c = p.complete(MSGS, TOOLS, max_tokens=256, seed=1)
        finally:
            p.close()
    assert lim.stats()["input_tokens"] == c.usage.prompt > count_messages(MSGS)


def test_cli_flags_make_limits():
    import argparse

    p = argparse.ArgumentParser()
    add_arguments(p)
    assert from_args(p.parse_args([])) is None
    lim = from_args(
        p.parse_args(["--limit-rpm", "600", "--limit-input-tpm", "400000", "--limit-output-tpm", "9"])
    )
    assert lim is not None and lim.rates == {"rpm": 600.0, "input_tpm": 400000.0, "output_tpm": 9.0}


def test_a_refused_request_is_a_429_with_retry_after_and_never_reaches_the_model():
    backend = ScriptedBackend()
    with LoopbackServer(backend, limits=ProviderLimits(rpm=1)) as srv:
        statuses = []
        for _ in range(2):
            req = urllib.request.Request(
                srv.url + "/v1/chat/completions",
                method="POST",
                data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
                headers={"Authorization": f"Bearer {KEYS['openai']}"},
            )
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    statuses.append((r.status, None))
            except urllib.error.HTTPError as e:
                statuses.append((e.code, e.headers.get("retry-after")))
    assert statuses == [(200, None), (429, "60")]
    assert len(backend.calls) == 1


def _fast_limiter(provider, limit: RateLimit, speed: float) -> None:
    """The provider's shared limiter on the fast clock (the server's runs just as fast)."""
    provider._limiter = SharedLimiter(
        provider._limiter.key + "|fast",
        limit,
        root=provider._root,
        clock=lambda: time.time() * speed,
        sleep=lambda s: time.sleep(s / speed),
    )


def _hammer(kind, srv, limit: RateLimit, tmp_path, threads=8, calls=10, speed=SPEED):
    results, errors = [], []

    def worker():
        p = make(kind, srv, sleep=Sleeps(), max_retries=20, max_concurrency=8)
        p._root = tmp_path
        _fast_limiter(p, limit, speed)
        try:
            for _ in range(calls):
                results.append(p.complete(MSGS, TOOLS, max_tokens=256, seed=1, cache_breakpoint=2))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            p.close()

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert errors == []
    return results


@pytest.mark.parametrize("kind", KINDS)
def test_matched_limits_send_no_429(kind, api_keys, tmp_path):
    # The client's bucket holds 135 to the server's 150: 1.5 s of slack for requests on their way,
    # on a slower clock than the other tests' (a loaded machine's delays are multiplied by it).
    speed = 4.0
    server = ProviderLimits(rpm=150, input_tpm=150 * 2000, clock=lambda: time.monotonic() * speed)
    with LoopbackServer(ScriptedBackend(), limits=server) as srv:
        done = _hammer(kind, srv, RateLimit(rpm=150, input_tpm=150 * 2000), tmp_path, calls=30, speed=speed)
    assert len(done) == 240 and server.stats()["rejected"] == 0 and server.stats()["admitted"] == 240
    assert all(c.extra["attempts"] == 1 for c in done)
    # past the burst of 135, calls wait for the limiter
    assert sum(c.extra["queue_s"] > 0.01 for c in done) >= 80


@pytest.mark.parametrize("kind", KINDS)
def test_a_limit_set_too_high_meets_429s_slows_down_and_gets_every_call_through(kind, api_keys, tmp_path):
    """The client believes in twice the server's limit: the first burst meets 429s (each pauses every
    worker and slows the rates), then the client's rate converges below the server's."""
    server = ProviderLimits(rpm=30, clock=lambda: time.monotonic() * SPEED)
    with LoopbackServer(ScriptedBackend(), limits=server) as srv:
        done = _hammer(kind, srv, RateLimit(rpm=60), tmp_path)
    stats = server.stats()
    assert len(done) == 80 and stats["admitted"] == 80 and 0 < stats["rejected"] < 60
    assert sum(c.extra["attempts"] - 1 for c in done) == stats["rejected"]  # every 429 was retried
