"""The trial watchdog's mechanism: end a trial stuck inside one call (a hung model call or
engine call) at its wall-clock limit; the loop's own between-turn check covers the rest.

`Watchdog` raises an exception in the thread that armed it; `timeout_exception` is the one a
trial gets; `trial_watchdog` arms it `WATCHDOG_GRACE_S` past the trial's own deadline.

It fires again every `repeat_s` until it is disarmed: code under it may catch the first
exception (an SDK wraps whatever its socket read raised into a connection error, a retry loop
catches that), so one firing cannot be trusted to end the trial; the next one lands in the
retry, the backoff sleep or the next read. The HTTP transport also refuses to retry it
(bench/providers/http/transport.py), but the watchdog does not depend on that.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.core import queued
from bench.core.outcomes import TrialTimeout


class Watchdog:
    """Raise `exc_type()` in the arming thread if it is still running `timeout_s` later.

    In the main thread this is SIGALRM: the handler runs even while the thread is blocked in a
    socket read or a sleep (the syscall returns EINTR, PEP 475 runs the handler, which
    raises). An earlier SIGALRM timer (pytest-timeout uses one) is saved and restored. In any
    other thread it falls back to an asynchronous exception, which lands when the thread next
    runs Python bytecode (a call blocked in C for good is then bounded by that call's own
    timeout: ENGINE_TIMEOUT_S for the engine, the HTTP timeout for providers)."""

    def __init__(
        self,
        timeout_s: float,
        exc_type: type[BaseException],
        repeat_s: float = 1.0,
        extend: Callable[[], float] | None = None,
    ) -> None:
        """`extend()`: seconds the limit moves by so far (a trial's time queued for the study's
        allowance, bench/core/queued.py); when the timer fires before them, it waits them out."""
        self.timeout_s = max(0.001, float(timeout_s))
        self._extend, self._granted = extend, 0.0
        self.repeat_s = max(0.001, float(repeat_s))
        self.exc_type = exc_type
        self.fired = 0  # how many times it raised (truthy once it has)
        self._armed = False
        self._prev_handler: Any = None
        self._prev_timer: tuple[float, float] = (0.0, 0.0)
        self._armed_at = 0.0
        self._timer: threading.Timer | None = None
        self._main = threading.current_thread() is threading.main_thread()

    def _owed(self) -> float:
        """Seconds of extension not yet waited out (granted now)."""
        owed = (self._extend() - self._granted) if self._extend is not None else 0.0
        if owed <= 0.001:
            return 0.0
        self._granted += owed
        return owed

    def _on_alarm(self, signum: int, frame: Any) -> None:
        if self._armed:  # a disarmed watchdog never interrupts cleanup; the itimer repeats by itself
            owed = self._owed()
            if owed:
                signal.setitimer(signal.ITIMER_REAL, owed, self.repeat_s)
                return
            self.fired += 1
            raise self.exc_type()

    def _async_raise(self, ident: int) -> None:
        if not self._armed:
            return
        owed = self._owed()
        if owed:
            self._schedule(owed, ident)
            return
        self.fired += 1
        # Only a class can be injected; it is instantiated without arguments.
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(self.exc_type))
        self._schedule(self.repeat_s, ident)

    def _schedule(self, after_s: float, ident: int) -> None:
        self._timer = threading.Timer(after_s, self._async_raise, args=(ident,))
        self._timer.daemon = True
        self._timer.start()

    def __enter__(self) -> Watchdog:
        self._armed = True
        self._armed_at = time.monotonic()
        if self._main:
            self._prev_handler = signal.signal(signal.SIGALRM, self._on_alarm)
            self._prev_timer = signal.setitimer(signal.ITIMER_REAL, self.timeout_s, self.repeat_s)
        else:
            self._schedule(self.timeout_s, threading.get_ident())
        return self

    def disarm(self) -> None:
        if not self._armed and self._prev_handler is None and self._timer is None:
            return
        self._armed = False
        if self._main and self._prev_handler is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._prev_handler)
            self._prev_handler = None
            remaining, interval = self._prev_timer
            if remaining > 0:  # give the earlier timer back what it had left
                left = remaining - (time.monotonic() - self._armed_at)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), interval)
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def __exit__(self, *exc: object) -> None:
        self.disarm()


def timeout_exception() -> type[BaseException]:
    """What a trial's watchdog raises: the `timeout` agent failure (bench.core.outcomes)."""
    return TrialTimeout


WATCHDOG_GRACE_S = 5.0  # past the deadline, the loop's own check has had its chance


def trial_watchdog(timeout_s: float) -> Watchdog:
    """Fires WATCHDOG_GRACE_S after the trial's own deadline (limits.trial_timeout_s, moved by the
    time the trial queues for the study's allowance, as the loop's is), then every
    WATCHDOG_GRACE_S again until the trial is out of the watched code. Made in the trial's thread."""
    return Watchdog(
        timeout_s + WATCHDOG_GRACE_S, TrialTimeout, repeat_s=WATCHDOG_GRACE_S, extend=queued.since_now()
    )
