"""Record/replay: a cassette recorded from any provider (the sim directly, or a real SDK against the
loopback server) plays the same trial back offline; a miss and recorded errors are ProviderErrors."""

from __future__ import annotations

import json

import pytest

from bench.core.toolspecs import TOOLS
from bench.core.types import Message, request_hash
from bench.providers import make_provider
from bench.providers.base import ProviderError
from bench.providers.http.config import ModelConfigError
from bench.providers.replay import RecordingProvider, ReplayProvider
from bench.serve.server import LoopbackServer
from tests.helpers.configs import model_config
from tests.helpers.serve_support import KEYS, Sleeps, make, toy_backend
from tests.helpers.sim_world import make_task, provider, run

pytestmark = pytest.mark.usefixtures("api_keys")  # tests/helpers/fixtures.py


def test_a_recorded_sim_trial_replays_identically(tmp_path):
    task, cassette = make_task(), tmp_path / "sim.jsonl"
    world0, msgs0, replies0 = run(RecordingProvider(provider("sim", task), cassette), task, seed=5002)
    lines = cassette.read_text().splitlines()
    assert len(lines) == len(replies0)
    assert json.loads(lines[0])["request_hash"] == replies0[0].request_hash
    world1, msgs1, replies1 = run(ReplayProvider(cassette), task, seed=5002)
    assert replies1 == replies0  # every field: content, tool calls, usage, latencies, cost, extra
    assert [m.to_dict() for m in msgs1] == [m.to_dict() for m in msgs0] and world1.files == world0.files


def test_a_cassette_recorded_through_a_real_sdk_replays_offline(tmp_path, api_keys):
    task, cassette = make_task(), tmp_path / "anthropic.jsonl"
    with LoopbackServer(toy_backend(), faults=["429:1"], retry_after_s=0.01) as srv:
        recorder = RecordingProvider(make("anthropic", srv, sleep=Sleeps()), cassette)
        _, msgs0, replies0 = run(recorder, task, seed=11)
        recorder.close()
    # the server is gone: replay needs no network and no key
    replay = make_provider({"provider": "replay", "cassette": str(cassette), "name": "replay"})
    assert isinstance(replay, ReplayProvider) and replay.model_id == "anthropic-model"
    _, msgs1, replies1 = run(replay, task, seed=11)
    assert replies1 == replies0 and replies0[0].extra["attempts"] == 2
    assert KEYS["anthropic"] not in cassette.read_text()


def test_a_miss_names_the_hash_and_how_to_re_record(tmp_path):
    cassette = tmp_path / "c.jsonl"
    cassette.write_text("")
    msgs = (Message("user", "[task:toy/1] never recorded"),)
    rhash = request_hash(msgs, TOOLS, 100, 0)
    with pytest.raises(
        ProviderError, match=f"^cassette has no entry for request {rhash}; re-record with model.record="
    ):
        ReplayProvider(cassette).complete(msgs, TOOLS, max_tokens=100, seed=0)


class _Failing:
    model_id = "flaky"

    def complete(self, messages, tools, *, max_tokens, seed, cache_breakpoint=None):
        raise ProviderError("anthropic model x: http_529 after 5 attempt(s)")

    def close(self):
        pass


def test_provider_errors_are_recorded_and_replayed(tmp_path):
    cassette, msgs = tmp_path / "e.jsonl", (Message("user", "hi"),)
    with pytest.raises(ProviderError):
        RecordingProvider(_Failing(), cassette).complete(msgs, (), max_tokens=10, seed=1)
    with pytest.raises(ProviderError, match="http_529 after 5 attempt"):
        ReplayProvider(cassette).complete(msgs, (), max_tokens=10, seed=1)


def test_identical_requests_replay_in_recorded_order(tmp_path):
    task, cassette = make_task(), tmp_path / "twice.jsonl"
    sim = provider("sim", task)
    rec = RecordingProvider(sim, cassette)
    msgs = (Message("system", "s"), Message("user", "[task:toy/1] " + task.text))
    first = rec.complete(msgs, TOOLS, max_tokens=500, seed=3)
    second = rec.complete(msgs, TOOLS, max_tokens=500, seed=3)  # the sim's cache makes usage differ
    assert first.usage != second.usage
    rp = ReplayProvider(cassette)
    assert [rp.complete(msgs, TOOLS, max_tokens=500, seed=3) for _ in range(3)] == [first, second, second]


def test_config_validation_and_record_wrapping(tmp_path):
    with pytest.raises(ModelConfigError, match="model.cassette is missing"):
        ReplayProvider.from_config({"provider": "replay"})
    with pytest.raises(ModelConfigError, match="does not exist"):
        ReplayProvider.from_config({"provider": "replay", "cassette": str(tmp_path / "nope.jsonl")})
    with pytest.raises(ModelConfigError, match="unknown keys"):
        ReplayProvider.from_config({"provider": "replay", "cassette": "x", "tape": 1})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"request_hash": "a", "completion": {}}\nnot json\n')
    with pytest.raises(ModelConfigError, match="line 2"):
        ReplayProvider(bad)
    sim = model_config("sim")
    assert not isinstance(make_provider(sim), RecordingProvider)
    wrapped = make_provider({**sim, "record": str(tmp_path / "r.jsonl")})
    assert isinstance(wrapped, RecordingProvider) and wrapped.model_id == "sim"


def test_replay_from_the_conf_groups(tmp_path):
    task, cassette = make_task(), tmp_path / "c.jsonl"
    run(RecordingProvider(provider("sim", task), cassette), task, seed=1, max_turns=2)
    cfg = model_config("replay")
    with pytest.raises(ModelConfigError, match="model.cassette is missing"):
        make_provider(cfg)
    cfg["cassette"] = str(cassette)
    assert make_provider(cfg).model_id == "sim"
    # or on top of the recorded model's own group (same window and max_output):
    over = {**model_config("anthropic"), "provider": "replay", "cassette": str(cassette)}
    assert isinstance(make_provider(over), ReplayProvider)
