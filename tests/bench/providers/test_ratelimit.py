"""The shared rate limiter (bench/providers/http/ratelimit.py): its config, its buckets on a
fake clock, pauses after a 429 seen by another worker, and one allowance across processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.config import compose, config_hash, load
from bench.core.types import Usage
from bench.providers.http.config import ModelConfigError, RealModelConfig
from bench.providers.http.ratelimit import FLOOR, RateLimit, SharedLimiter


class Clock:
    """time.time and time.sleep in one: sleeping advances the clock."""

    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def limiter(tmp_path: Path, clock: Clock, **limits) -> SharedLimiter:
    return SharedLimiter(
        "openai|http://x|m", RateLimit(**limits), root=tmp_path, clock=clock, sleep=clock.sleep
    )


def test_config_composes_overrides_and_keeps_the_hash(api_keys):
    base = compose(["model=openai"])
    cfg = compose(
        [
            "model=openai",
            "model.rate_limit.rpm=600",
            "model.rate_limit.input_tpm=400000",
            "model.rate_limit.output_tpm=80000",
            "model.rate_limit.count_cache_reads=false",
        ]
    )
    settings = RealModelConfig.from_mapping(load(cfg).model, "openai")
    assert settings.rate_limit == RateLimit(
        rpm=600.0, input_tpm=400000.0, output_tpm=80000.0, count_cache_reads=False
    )
    assert RealModelConfig.from_mapping(load(base).model, "openai").rate_limit == RateLimit()
    assert (
        RealModelConfig.from_mapping(
            load(compose(["model=anthropic"])).model, "anthropic"
        ).rate_limit.count_cache_reads
        is False
    )
    # when calls are sent changes no result: a study resumes across a changed limit
    assert load(cfg).config_hash == load(base).config_hash == config_hash(load(base).resolved)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"rpm": 0},
            r"^model\.rate_limit\.rpm: Input should be greater than 0, got 0; fix it in conf/model/",
        ),
        ({"input_tpm": "lots"}, r"^model\.rate_limit\.input_tpm: Input should be a valid number, got 'lots'"),
        ({"output_tpm": True}, r"^model\.rate_limit\.output_tpm: Input should be a valid number, got True"),
        (
            {"count_cache_reads": "yes"},
            r"^model\.rate_limit\.count_cache_reads: Input should be a valid boolean",
        ),
        (
            {"tpm": 5},
            r"^model\.rate_limit\.tpm: unknown key 'tpm' in .*; known keys: count_cache_reads, input_tpm",
        ),
    ],
)
def test_bad_limits_name_the_key(value, message, api_keys):
    from tests.helpers.serve_support import model_cfg

    with pytest.raises(ModelConfigError, match=message):
        RealModelConfig.from_mapping(model_cfg("openai", rate_limit=value), "openai")


def test_requests_per_minute(tmp_path):
    clock = Clock()
    lim = limiter(tmp_path, clock, rpm=60)
    assert [lim.acquire(10) for _ in range(54)] == [0.0] * 54  # a burst of 90% of a minute (BURST)
    waited = lim.acquire(10)
    assert waited == pytest.approx(1.0)  # then one a second
    assert lim.acquire(10) == pytest.approx(1.0)


def test_input_tokens_are_estimated_then_corrected(tmp_path):
    clock = Clock()
    lim = limiter(tmp_path, clock, input_tpm=6000)  # the bucket holds 5,400
    assert lim.acquire(5000) == 0.0
    lim.settle(5000, Usage(input=1000, cache_read=1000))  # it really was 2,000: 3,000 come back
    assert lim.snapshot()["input_tpm"] == pytest.approx(3400)
    assert lim.acquire(3400) == 0.0
    assert lim.acquire(3000) == pytest.approx(30.0)  # 3,000 at 100 a second
    assert lim.acquire(9000) == pytest.approx(54.0)  # more than the bucket holds: sent when it is full
    no_reads = SharedLimiter(
        "k2",
        RateLimit(input_tpm=6000, count_cache_reads=False),
        root=tmp_path,
        clock=clock,
        sleep=clock.sleep,
    )
    no_reads.acquire(3000)
    no_reads.settle(3000, Usage(input=500, cache_read=2500))
    assert no_reads.snapshot()["input_tpm"] == pytest.approx(4900)


def test_output_debt_holds_the_next_call(tmp_path):
    clock = Clock()
    lim = limiter(tmp_path, clock, output_tpm=600)
    lim.acquire(1)
    lim.settle(1, Usage(output=840))  # of 540, 300 in debt: 30 s at 10 a second
    assert lim.acquire(1) == pytest.approx(30.0)


def test_a_429_pauses_every_worker_and_slows_the_rates(tmp_path):
    clock = Clock()
    one, other = limiter(tmp_path, clock, rpm=600), limiter(tmp_path, clock, rpm=600)
    assert not one.throttled("http_400", None)
    assert one.throttled("rate_limit", 7.0)
    assert other.acquire(1) == pytest.approx(7.0)  # another worker (same file) waits out the pause
    state = other.snapshot()
    assert state["scale"] == pytest.approx(0.8) and state["throttles"] == 1
    for _ in range(30):
        one.throttled("http_529", 0.0)
    assert one.snapshot()["scale"] == pytest.approx(FLOOR)
    one.acquire(1)
    one.settle(1, Usage(output=1))
    assert one.snapshot()["scale"] == pytest.approx(FLOOR + 0.01)  # each success gives back a little
    assert limiter(tmp_path, clock).throttled("rate_limit", None)  # no limit configured: still pauses
    assert other.acquire(1) == pytest.approx(1.0)


def test_a_torn_state_file_starts_from_full_buckets(tmp_path):
    clock = Clock()
    lim = limiter(tmp_path, clock, rpm=60)
    lim.acquire(1)
    lim.path.write_text('{"rpm": 3')
    assert lim.acquire(1) == 0.0 and lim.snapshot()["rpm"] == pytest.approx(53)


_WORKER = """
import sys, time
from bench.providers.http.ratelimit import RateLimit, SharedLimiter
lim = SharedLimiter("openai|shared|m", RateLimit(rpm=float(sys.argv[2])))
n, end = 0, time.time() + float(sys.argv[1])
while True:
    lim.acquire(1)
    if time.time() > end:
        break
    n += 1
print(n)
"""


def test_one_allowance_across_processes(tmp_path, monkeypatch):
    """Three processes hammer one key for 1.5 s: together they get one bucket's worth (216 + 4/s),
    not three (a per-process limiter would let through ~650)."""
    monkeypatch.setenv("CTXBENCH_LIMIT_DIR", str(tmp_path))
    start = time.time()
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, "1.5", "240"], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    counts = [int(p.communicate(timeout=60)[0]) for p in procs]
    elapsed = time.time() - start
    assert 216 <= sum(counts) <= 216 + 4 * elapsed + 1, counts
