"""Time a trial spends waiting for its turn at what the study shares (the rate limiter of its
provider account, a concurrency slot): the study's scheduling, not the trial's work. With 128
trials in flight against a 400k tokens/min limit, a trial queued 450 s of its 730 s on average,
and half the trials hit their wall-clock limit (900 s) while their calls waited: a verdict of
the schedule, which a trial run alone never gets. So the trial's limit does not count it
(bench/trial/loop.py's deadline, bench/trial/watchdog.py's timer).

One clock per thread, since a trial's calls run in its thread (one trial per worker process,
or per thread with hydra/launcher=ctxbench_threads); `since_now()` reads it for one trial, from
any thread (the watchdog's timer), a wait in progress included."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator


class QueueClock:
    def __init__(self) -> None:
        self.done = 0.0
        self.since: float | None = None  # the wait in progress began then

    def seconds(self) -> float:
        since = self.since
        return self.done + (time.monotonic() - since if since is not None else 0.0)


_here = threading.local()


def clock() -> QueueClock:
    """This thread's clock."""
    c = getattr(_here, "clock", None)
    if c is None:
        c = _here.clock = QueueClock()
    return c


@contextlib.contextmanager
def waiting() -> Iterator[None]:
    """Around a wait for the study's shared allowance, in the trial's thread."""
    c = clock()
    c.since = time.monotonic()
    try:
        yield
    finally:
        c.done += time.monotonic() - c.since
        c.since = None


def add(seconds: float) -> None:
    """A wait measured by the caller, once it is over (a concurrency slot)."""
    clock().done += max(seconds, 0.0)


def since_now() -> Callable[[], float]:
    """Seconds this thread queued from now on (call it in the trial's thread)."""
    c = clock()
    base = c.seconds()
    return lambda: c.seconds() - base
