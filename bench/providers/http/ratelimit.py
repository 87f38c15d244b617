"""One rate limit per (provider, base_url, model) on this machine, shared by every worker.

A provider limits an account, not a process: requests per minute and input/output tokens per
minute (`model.rate_limit`, the `RateLimit` schema below). Each limit is a token bucket that
holds at most 90% of a minute's allowance (BURST) and refills continuously, as the providers' own
do. The buckets of one key live in one small JSON file under $CTXBENCH_LIMIT_DIR (default
$TMPDIR/ctxbench-limits-<uid>), read and written under a file lock beside it (filelock: flock):
joblib's worker processes, threads inside a worker and two studies on one machine all draw from
the same allowance, since they spend the same account's. (Launchers spread over several machines get one allowance per
machine: divide the limits by the number of machines, as for max_concurrency.)

- `acquire(input_tokens)` before a call: waits until a request and the estimated input tokens
  are available and no pause is in force, takes them, returns the seconds it waited.
- `settle(estimate, usage)` after it: the input bucket is corrected to what the provider
  counted, the output bucket is charged (output is known only afterwards, so that bucket may go
  into debt, and the next call waits until it is paid back).
- `throttled(failure)` on a 429 or an overload (503/529): every worker pauses for the server's
  retry-after (1 s when it sends none) and the rates drop to 80% (to no less than a quarter);
  each call that succeeds gives back 1%. A limit set too high thus converges on what the server
  really allows instead of collecting 429s.

Without any limit configured the file still carries pauses, so one worker's 429 holds back all.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar

from filelock import FileLock
from pydantic import Field, StrictBool, StrictFloat

from bench.core.knobs import Knobs
from bench.core.types import Usage

THROTTLE_KINDS = ("rate_limit", "http_429", "http_503", "http_529")
DEFAULT_PAUSE_S = 1.0
SLOWDOWN, FLOOR, RECOVERY = 0.8, 0.25, 0.01
# The client's buckets hold 90% of a minute: the server's bucket fills while our requests are on
# the way to it, and a full bucket wastes its refill, so a client bucket exactly as large as the
# server's runs a little ahead of it and meets the odd 429.
BURST = 0.9
MAX_NAP_S = 1.0
STATE_BYTES = 512  # a waiter rechecks at least this often: another worker's refund may free it earlier
BUCKETS = ("rpm", "input_tpm", "output_tpm")


PerMinute = Annotated[StrictFloat, Field(gt=0)] | None


class RateLimit(Knobs):
    """`model.rate_limit`: per-minute limits of the account, shared by every worker on this machine."""

    rpm: PerMinute = Field(
        default=None, description="requests per minute; null = not limited (429s still pause every worker)"
    )
    input_tpm: PerMinute = Field(
        default=None,
        description="input tokens per minute (the prompt as cl100k counts "
        "it before the call; corrected after); null = not limited",
    )
    output_tpm: PerMinute = Field(
        default=None, description="output tokens per minute (charged after the call); null = not limited"
    )
    count_cache_reads: StrictBool = Field(
        default=True,
        description="cache reads count against input_tpm (OpenAI); Anthropic's current models: false",
    )

    def charged_input(self, usage: Usage) -> int:
        return usage.input + usage.cache_write + (usage.cache_read if self.count_cache_reads else 0)


def refill(level: float, capacity: float, per_minute: float, elapsed_s: float) -> float:
    """A token bucket `elapsed_s` later: it refills at `per_minute`, never above `capacity`."""
    return min(capacity, level + per_minute * max(elapsed_s, 0.0) / 60.0)


def limit_dir() -> Path:
    return Path(
        os.environ.get("CTXBENCH_LIMIT_DIR") or Path(tempfile.gettempdir()) / f"ctxbench-limits-{os.getuid()}"
    )


class SharedLimiter:
    """The buckets of one key, in a file every process of this machine shares (see the module doc)."""

    _registry: ClassVar[dict[tuple[str, RateLimit], SharedLimiter]] = {}
    _registry_lock = threading.Lock()

    def __init__(
        self,
        key: str,
        limit: RateLimit,
        *,
        root: Path | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.key, self.limit, self._root = key, limit, root
        self._name = f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"
        self._clock, self._sleep = clock, sleep
        self._local = threading.Lock()  # threads of one process queue here before the file lock

    @classmethod
    def for_key(cls, key: str, limit: RateLimit) -> SharedLimiter:
        with cls._registry_lock:
            return cls._registry.setdefault((key, limit), cls(key, limit))

    @property
    def path(self) -> Path:  # read each time: $CTXBENCH_LIMIT_DIR may be set after the first use
        return (self._root or limit_dir()) / self._name

    def _rates(self) -> dict[str, float | None]:
        return {"rpm": self.limit.rpm, "input_tpm": self.limit.input_tpm, "output_tpm": self.limit.output_tpm}

    def _update(self, change: Callable[[dict[str, Any], float], Any]) -> Any:
        """Read the state under the lock, bring the buckets up to now, apply `change`, write back."""
        with self._local:
            path = self.path
            path.parent.mkdir(parents=True, exist_ok=True)
            # Polled, not queued in the kernel: 5 ms is well under a call's own latency.
            with FileLock(path.with_suffix(".lock"), mode=0o600, poll_interval=0.005):
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    return self._change(fd, change)
                finally:
                    os.close(fd)

    def _change(self, fd: int, change: Callable[[dict[str, Any], float], Any]) -> Any:
        raw = os.pread(fd, STATE_BYTES, 0).strip()
        try:
            state = json.loads(raw) if raw else {}
        except json.JSONDecodeError:  # a writer killed mid-write: start from full buckets
            state = {}
        now = self._clock()
        scale = float(state.get("scale", 1.0))
        last = float(state.get("t", now))
        for name, rate in self._rates().items():
            if rate is not None:
                state[name] = refill(
                    float(state.get(name, rate * BURST)), rate * BURST, rate * scale, now - last
                )
        state["t"] = now
        out = change(state, now)
        # Rewritten in place, padded to a fixed size: no truncate, so no journal commit per call.
        os.pwrite(fd, json.dumps(state).encode().ljust(STATE_BYTES), 0)
        return out

    def acquire(self, input_tokens: int) -> float:
        """Wait for a request and `input_tokens` of allowance; returns the seconds waited."""
        rpm, itpm = self.limit.rpm, self.limit.input_tpm
        # A request larger than a whole minute's allowance goes when the bucket is full.
        need_in = min(float(input_tokens), itpm * BURST) if itpm is not None else 0.0

        def take(state: dict[str, Any], now: float) -> float:
            scale = float(state.get("scale", 1.0))
            waits = [float(state.get("pause_until", 0.0)) - now]
            if rpm is not None:
                waits.append((1.0 - state["rpm"]) * 60.0 / (rpm * scale))
            if itpm is not None:
                waits.append((need_in - state["input_tpm"]) * 60.0 / (itpm * scale))
            if self.limit.output_tpm is not None:
                waits.append(-state["output_tpm"] * 60.0 / (self.limit.output_tpm * scale))
            wait = max(waits)
            if wait > 0:
                return wait
            if rpm is not None:
                state["rpm"] -= 1.0
            if itpm is not None:
                state["input_tpm"] -= need_in
            return 0.0

        started = self._clock()
        while (wait := self._update(take)) > 0:
            self._sleep(min(wait, MAX_NAP_S))
        return max(self._clock() - started, 0.0)

    def settle(self, estimate: int, usage: Usage) -> None:
        """After a call: input corrected to what the provider counted, output charged."""
        itpm, otpm = self.limit.input_tpm, self.limit.output_tpm
        charged = self.limit.charged_input(usage)

        def correct(state: dict[str, Any], now: float) -> None:
            if itpm is not None:
                state["input_tpm"] = min(
                    itpm * BURST, state["input_tpm"] + min(float(estimate), itpm * BURST) - charged
                )
            if otpm is not None:
                state["output_tpm"] -= usage.output
            state["scale"] = min(1.0, float(state.get("scale", 1.0)) + RECOVERY)

        self._update(correct)

    def throttled(self, kind: str, retry_after: float | None) -> bool:
        """A failure of `kind`: when it is the server saying slow down, every worker pauses."""
        if kind not in THROTTLE_KINDS:
            return False
        pause = DEFAULT_PAUSE_S if retry_after is None else retry_after

        def slow_down(state: dict[str, Any], now: float) -> None:
            state["pause_until"] = max(float(state.get("pause_until", 0.0)), now + pause)
            state["scale"] = max(FLOOR, float(state.get("scale", 1.0)) * SLOWDOWN)
            state["throttles"] = int(state.get("throttles", 0)) + 1

        self._update(slow_down)
        return True

    def snapshot(self) -> dict[str, Any]:
        """The shared state now (levels, scale, pause, how many throttles): for tests and make bench."""
        return dict(self._update(lambda state, now: dict(state)))
