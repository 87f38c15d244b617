"""MLflow calls that survive a busy SQLite store.

SQLite has one writer at a time. MLflow waits for the lock (busy_timeout) but a transaction
that read first and then wants to write can be refused at once ("database is locked": waiting
could deadlock), and a writer held up past the timeout is refused too. MLflow rolls the
transaction back and raises MlflowException, so the call had no effect and is safe to repeat.
Without this, N workers sharing one store could lose a trial's run (never created, or never
closed) to a neighbour's write. Other errors pass through at once.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_before_delay, wait_exponential

log = logging.getLogger("ctxbench.tracking")

T = TypeVar("T")
# What SQLite says, through sqlite3.OperationalError or MLflow's MlflowException wrapping it.
LOCKED = ("database is locked", "database table is locked", "database schema is locked")
BUDGET_S = 180.0  # a trial's whole start or finish may wait this long for the store
MAX_DELAY_S = 5.0


def is_locked(exc: BaseException) -> bool:
    text = str(exc)
    return any(s in text for s in LOCKED)


def _jittered(retry_state: RetryCallState) -> float:
    """0.05 s doubling to MAX_DELAY_S, times 0.5..1.5 so N workers do not retry in lockstep."""
    return _DOUBLING(retry_state) * random.uniform(0.5, 1.5)


_DOUBLING = wait_exponential(multiplier=0.05, max=MAX_DELAY_S)


def with_retry(
    fn: Callable[[], T], what: str, *, budget_s: float = BUDGET_S, sleep: Callable[[float], None] = time.sleep
) -> T:
    """`fn()`, repeated with exponential backoff and jitter while the store is locked, for at
    most `budget_s` (no wait that would end past it is begun); then the last error is raised."""

    def warn(rs: RetryCallState) -> None:
        log.warning(
            "mlflow %s: database is locked (attempt %d), retrying in %.2fs",
            what,
            rs.attempt_number,
            rs.upcoming_sleep,
        )

    retrying = Retrying(
        retry=retry_if_exception(is_locked),
        wait=_jittered,
        stop=stop_before_delay(budget_s),
        sleep=sleep,
        before_sleep=warn,
        reraise=True,
    )
    return retrying(fn)


class RetryingClient:
    """An MlflowClient whose every method call goes through `with_retry`."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            return with_retry(lambda: attr(*args, **kwargs), name)

        return call


_CLIENTS: dict[tuple[str, int], RetryingClient] = {}


def client(uri: str) -> RetryingClient:
    """One client per store and process: making one resolves its store again (~8 ms, twice a
    trial). The client holds no state of a call's (MLflow's store opens a session per call), so
    the threads of a process share it; a forked child makes its own (the key has the pid). A new
    SQLite store starts as a copy of an empty one (bench/tracking/store.py)."""
    key = (uri, os.getpid())
    made = _CLIENTS.get(key)
    if made is None:
        from mlflow.tracking import MlflowClient

        from bench.tracking.store import provision

        provision(uri)

        made = _CLIENTS[key] = RetryingClient(with_retry(lambda: MlflowClient(tracking_uri=uri), "client"))
    return made
