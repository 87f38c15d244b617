"""Usage, prefix cache, latency, cost, determinism and speed of SimProvider."""

from __future__ import annotations

import dataclasses
import time

import pytest

from bench.core import render
from bench.core.tokens import count_messages, tools_tokens
from bench.core.toolspecs import TOOLS
from bench.core.types import Message
from bench.providers.base import ProviderError
from bench.sim import provider as sim_module
from tests.helpers.sim_world import (
    API,
    API_V1,
    filler,
    make_task,
    prefix,
    provider,
    read_turn,
    run,
)


def calls_of(sim, contexts):
    return [sim.complete(tuple(c), TOOLS, max_tokens=4096, seed=9) for c in contexts]


def raw_contexts():
    """The contexts an append-only (raw) trial sent, turn by turn."""
    task = make_task()
    _, transcript, replies = run(provider("sim", task), task, seed=9)
    ends = [i for i, m in enumerate(transcript) if m.role == "assistant"]
    return task, [transcript[:i] for i in ends]


def test_usage_is_anthropic_style_over_the_real_token_count():
    task, contexts = raw_contexts()
    for ctx, c in zip(contexts, calls_of(provider("sim", task), contexts), strict=True):
        assert c.usage.prompt == c.usage.input + c.usage.cache_read + c.usage.cache_write
        assert c.usage.prompt == count_messages(ctx) + tools_tokens(TOOLS)[1]
        assert min(c.usage.input, c.usage.cache_read, c.usage.cache_write, c.usage.output) >= 0


def test_append_only_transcript_gets_growing_cache_reads():
    task, contexts = raw_contexts()
    reads = [c.usage.cache_read for c in calls_of(provider("sim", task), contexts)]
    print("cache reads, append-only:", reads)
    assert reads[0] == 0
    assert all(r > 0 for r in reads[1:])
    assert reads == sorted(reads) and reads[-1] > reads[1]


def test_compaction_breaks_the_prefix_at_that_turn():
    task, contexts = raw_contexts()
    k = len(contexts) // 2
    summary = Message(
        "user",
        "SUMMARY OF EARLIER TURNS\n\n"
        + filler(400, 5).content
        + "\nCURRENT STEP [step:s02] Use the timeout in the client",
    )
    compacted = [*prefix(task), summary]
    later = compacted + contexts[-1][len(contexts[k]) :]
    sim = provider("sim", task)
    before = calls_of(sim, contexts[:k])
    at, after = calls_of(sim, [compacted, later])
    stable = count_messages(prefix(task)) + tools_tokens(TOOLS)[1]
    print(
        "cache reads:",
        [c.usage.cache_read for c in before],
        "| compaction:",
        at.usage.cache_read,
        "| next:",
        after.usage.cache_read,
    )
    assert at.usage.cache_read < before[-1].usage.cache_read
    assert at.usage.cache_read == stable // 128 * 128  # only the stable prefix is still shared
    assert after.usage.cache_read > at.usage.cache_read


def test_cache_expires_after_ttl_and_needs_a_minimum_size():
    task, contexts = raw_contexts()
    reads = [c.usage.cache_read for c in calls_of(provider("sim", task, cache_ttl_s=0.0), contexts)]
    assert reads == [0] * len(reads)
    tiny = [Message("user", render.task_block(make_task(text_pad=0)))]
    c = provider("sim", task).complete(tuple(tiny), (), max_tokens=4096, seed=1)
    assert c.usage.prompt < 1024 and c.usage.cache_read == c.usage.cache_write == 0


def test_latency_and_cost_follow_the_configured_formulas():
    task, contexts = raw_contexts()
    sim = provider("sim", task)
    p, price = sim.params, sim.price
    for c in calls_of(sim, contexts):
        u = c.usage
        ttft = (
            p.latency_base_s
            + p.latency_s_per_uncached_token * (u.input + u.cache_write)
            + p.latency_s_per_cached_token * u.cache_read
        )
        assert c.ttft_s == pytest.approx(ttft)
        assert c.latency_s == pytest.approx(ttft + p.decode_s_per_token * u.output)
        cost = (
            u.input * price.input
            + u.output * price.output
            + u.cache_read * price.cache_read
            + u.cache_write * price.cache_write
        ) / 1e6
        assert c.cost_usd == pytest.approx(cost)


def test_sleeps_only_when_time_scale_is_positive(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(sim_module.time, "sleep", slept.append)
    task, contexts = raw_contexts()
    calls_of(provider("sim", task), contexts[:2])
    assert slept == []
    sim = provider("sim", task)
    sim.time_scale = 0.01
    c = calls_of(sim, contexts[:1])[0]
    assert slept == [pytest.approx(c.latency_s * 0.01)]


def test_max_tokens_cuts_the_reply_and_an_overflow_is_a_provider_error():
    task = make_task()
    msgs = [
        *prefix(task),
        Message("user", render.current_step_block(task.steps[0])),
        *read_turn(API, API_V1, "r"),
    ]
    c = provider("sim", task).complete(tuple(msgs), TOOLS, max_tokens=5, seed=1)
    assert c.stop_reason == "max_tokens" and not c.tool_calls and c.usage.output <= 5
    small = provider("sim", task)
    small.window = 500
    with pytest.raises(ProviderError, match="exceeds"):
        small.complete(tuple(msgs), TOOLS, max_tokens=100, seed=1)


def test_same_messages_and_seed_give_the_same_completion():
    task, contexts = raw_contexts()
    a = [dataclasses.asdict(c) for c in calls_of(provider("sim", task), contexts)]
    b = [dataclasses.asdict(c) for c in calls_of(provider("sim", task), contexts)]
    assert a == b
    ids = [t["id"] for c in a for t in c["tool_calls"]]
    assert len(ids) == len(set(ids)) and all(i.startswith("call_") for i in ids)


def test_complete_on_a_30k_token_context_is_fast():
    task = make_task()
    msgs = [*prefix(task), Message("user", render.current_step_block(task.steps[0]))]
    i = 0
    while count_messages(msgs) < 30000:
        msgs += [filler(900, i), *read_turn(API, API_V1.replace("legacy", f"legacy{i}"), f"r{i}")]
        i += 1
    sim = provider("sim", task)
    sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=1)  # warm-up
    times = []
    for j in range(5):  # each turn appends, as a trial does
        msgs.append(Message("user", f"note {j}"))
        t0 = time.perf_counter()
        sim.complete(tuple(msgs), TOOLS, max_tokens=4096, seed=1)
        times.append(time.perf_counter() - t0)
    print(f"complete() on {count_messages(msgs)} tokens: median {sorted(times)[2] * 1000:.1f} ms")
    assert sorted(times)[2] < 0.020


def test_request_hash_is_the_shared_request_hash():
    from bench.core.types import request_hash

    task, contexts = raw_contexts()
    sim = provider("sim", task)
    for ctx in contexts:
        assert sim.complete(tuple(ctx), TOOLS, max_tokens=4096, seed=9).request_hash == request_hash(
            tuple(ctx), TOOLS, 4096, 9
        )
