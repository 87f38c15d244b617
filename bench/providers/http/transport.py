"""Transport policy shared by the HTTP providers (anthropic, openai).

- Retries are ours, not the SDKs' (they are built with max_retries=0): 429, 408/409, 5xx,
  timeouts, dropped connections and malformed/truncated responses are retried up to
  `model.max_retries` times with exponential backoff (`model.backoff_s` · 2^attempt, jittered,
  capped) or exactly the server's `retry-after`/`retry-after-ms` (capped at MAX_RETRY_AFTER_S).
  Other errors (400, 401, 403, 404, 422) are not retried. Either way the caller gets one
  `ProviderError`, and the trial fails with `provider_error`; a context overflow, in any
  vendor's wording, is `ContextOverflow` (the table: errors.py). The trial's own timeout
  (the watchdog's, possibly wrapped by an SDK) is re-raised as it is, never retried.
- Concurrency: at most `model.max_concurrency` calls in flight per (provider, base_url,
  model_id) on this machine. Inside a process a semaphore holds threads back; across
  processes (Hydra's joblib launcher runs trials in loky worker *processes*) slot files in
  $CTXBENCH_SLOT_DIR (default: $TMPDIR/ctxbench-slots-<uid>) are locked (filelock: flock), so
  joblib workers share one limit. Launchers on several machines (ray, slurm) get one limit per machine.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import random
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from filelock import FileLock, Timeout
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from bench.core import redact
from bench.core.outcomes import TrialFailed
from bench.core.queued import add as add_queued
from bench.core.queued import waiting
from bench.core.tokens import count_messages
from bench.core.types import Completion, Message, ToolCall, ToolSpec, Usage, request_hash
from bench.providers.base import ContextOverflow, ProviderError
from bench.providers.http import errors
from bench.providers.http.config import RealModelConfig
from bench.providers.http.ratelimit import SharedLimiter

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_S = 120.0
MAX_BACKOFF_S = 60.0


class TransientError(RuntimeError):
    """The server answered, but the answer was malformed or cut short: retried."""


@dataclass
class StreamResult:
    """One successful streamed reply, already mapped to harness types."""

    content: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str
    usage: Usage
    ttft_s: float
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Failure:
    kind: str
    retryable: bool
    retry_after: float | None = None


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    ra = headers.get("retry-after")
    if not ra:
        return None
    try:
        return max(float(ra), 0.0)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(ra)
        except (TypeError, ValueError):
            return None
        return max(when.timestamp() - time.time(), 0.0)


def trial_failure(exc: BaseException) -> TrialFailed | None:
    """The trial's own verdict (the watchdog's timeout) inside `exc`, which an SDK may have wrapped
    (openai wraps whatever its request raised into APIConnectionError): never a provider failure."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, TrialFailed):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


def classify(exc: BaseException) -> Failure:
    """Which failures are worth another attempt. Works for both SDKs by duck typing."""
    if trial_failure(exc) is not None:  # e.g. TrialTimeout: "Timeout" in its name is not the network's
        return Failure("trial_failed", False)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if 200 <= status < 300:  # e.g. a response the SDK could not validate
            return Failure("malformed_response", True)
        # str(exc) holds the body: the SDKs put the server's message (and its code) into it.
        found = errors.kind_of(status, f"{exc} {getattr(exc, 'body', '') or ''}")
        if found is not None:
            retry_after = parse_retry_after(getattr(getattr(exc, "response", None), "headers", None))
            label = (
                found.kind
                if found.kind in ("rate_limit", "context_overflow")
                else f"{found.kind} http_{status}"
            )
            return Failure(label, found.retryable, retry_after if found.retryable else None)
        return Failure(f"http_{status}", False)
    if isinstance(exc, TransientError | json.JSONDecodeError):
        return Failure("malformed_response", True)
    names = [c.__name__ for c in type(exc).__mro__]
    if any("Timeout" in n for n in names):
        return Failure("timeout", True)
    if (
        "APIConnectionError" in names
        or isinstance(exc, ConnectionError)
        or type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2")
    ):
        return Failure("connection", True)
    return Failure(type(exc).__name__, False)


class _Failed(Exception):
    """One attempt's failure, classified once: what `_retrying` decides on and reports."""

    def __init__(self, failure: Failure, exc: Exception) -> None:
        super().__init__(failure.kind)
        self.failure, self.exc = failure, exc


def _failure_of(rs: RetryCallState) -> Failure:
    failed = rs.outcome.exception() if rs.outcome is not None else None
    assert isinstance(failed, _Failed)  # only a _Failed is retried
    return failed.failure


def backoff_s(attempt: int, base: float, failure: Failure) -> float:
    if failure.retry_after is not None:
        return min(failure.retry_after, MAX_RETRY_AFTER_S)
    return min(base * (2**attempt), MAX_BACKOFF_S) * random.uniform(0.5, 1.0)


class Slots:
    """At most `n` concurrent holders per key, across threads and processes of this machine."""

    _registry: ClassVar[dict[tuple[str, int], Slots]] = {}
    _registry_lock = threading.Lock()

    def __init__(self, key: str, n: int) -> None:
        self.n = n
        self._sem = threading.BoundedSemaphore(n)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        root = Path(
            os.environ.get("CTXBENCH_SLOT_DIR")
            or Path(tempfile.gettempdir()) / f"ctxbench-slots-{os.getuid()}"
        )
        self._paths = [root / f"{digest}.{i}.lock" for i in range(n)]

    @classmethod
    def for_key(cls, key: str, n: int) -> Slots:
        with cls._registry_lock:
            return cls._registry.setdefault((key, n), cls(key, n))

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._sem:
            slot = self._free_slot()
            try:
                yield
            finally:
                slot.release()

    def _free_slot(self) -> FileLock:
        """The first of the n slot files no process holds, waiting until one is free."""
        self._paths[0].parent.mkdir(parents=True, exist_ok=True)
        while True:
            for path in self._paths:
                slot = FileLock(path, timeout=0, mode=0o600)
                try:
                    slot.acquire()
                    return slot
                except Timeout:
                    continue
            time.sleep(0.05)


class HttpProvider:
    """complete() for streaming HTTP providers: hash, build, retry, cost. Subclasses map the wire."""

    provider_name: ClassVar[str] = "http"

    def __init__(self, settings: RealModelConfig, *, sleep: Any = time.sleep) -> None:
        self.settings = settings
        self.model_id = settings.model_id
        self._sleep = sleep
        self._secret = settings.api_key()
        if settings.api_key_env is not None:
            redact.register(self._secret)  # scrubbed from errors, params and anything that enters a span
        key = f"{self.provider_name}|{settings.base_url}|{settings.model_id}"
        self._slots = Slots.for_key(key, settings.max_concurrency)
        self._limiter = SharedLimiter.for_key(key, settings.rate_limit)  # the account's RPM/TPM, machine-wide

    # -- subclass hooks
    def _build(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _stream(self, body: dict[str, Any], start: float, messages: tuple[Message, ...]) -> StreamResult:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def _retrying(self) -> Retrying:
        """Another attempt while the failure is retryable (the table: errors.py), up to
        `model.max_retries` more, after `backoff_s`; the trial's own timeout is never retried."""
        settings = self.settings

        def wait(rs: RetryCallState) -> float:
            return backoff_s(rs.attempt_number - 1, settings.backoff_s, _failure_of(rs))

        def warn(rs: RetryCallState) -> None:
            log.warning(
                "%s %s: %s (attempt %d of %d), retrying in %.2fs",
                self.provider_name,
                self.model_id,
                _failure_of(rs).kind,
                rs.attempt_number,
                settings.max_retries + 1,
                rs.upcoming_sleep,
            )

        return Retrying(
            retry=retry_if_exception(lambda e: isinstance(e, _Failed) and e.failure.retryable),
            stop=stop_after_attempt(settings.max_retries + 1),
            wait=wait,
            sleep=self._sleep,
            before_sleep=warn,
            reraise=True,
        )

    # -- the contract
    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion:
        messages, tools = tuple(messages), tuple(tools)
        rhash = request_hash(messages, tools, max_tokens, seed)
        body = self._build(messages, tools, max_tokens, seed, cache_breakpoint)
        queued, estimate = 0.0, count_messages(messages)

        def attempt() -> tuple[StreamResult, float]:
            nonlocal queued
            with waiting():  # the trial's wall-clock limit does not count it (bench/core/queued.py)
                queued += self._limiter.acquire(estimate)
            asked = time.monotonic()
            try:
                with self._slots.hold():
                    add_queued(time.monotonic() - asked)
                    queued += time.monotonic() - asked  # waiting for a slot is queueing, not the provider
                    start = time.monotonic()
                    res = self._stream(body, start, messages)
                    return res, time.monotonic() - start
            except Exception as exc:
                ours = trial_failure(exc)
                if ours is not None:  # the trial's wall budget: end the trial, do not retry the call
                    raise ours from None
                failure = classify(exc)
                self._limiter.throttled(failure.kind, failure.retry_after)
                raise _Failed(failure, exc) from exc

        retrying = self._retrying()
        try:
            res, latency = retrying(attempt)
        except _Failed as failed:
            error = ContextOverflow if failed.failure.kind == "context_overflow" else ProviderError
            exc = failed.exc
            raise error(
                redact.scrub(
                    f"{self.provider_name} model {self.model_id}: {failed.failure.kind} after "
                    f"{retrying.statistics['attempt_number']} attempt(s): {type(exc).__name__}: {exc}"
                )
            ) from exc
        attempts, waited = retrying.statistics["attempt_number"], retrying.statistics["idle_for"]
        self._limiter.settle(estimate, res.usage)
        extra = {
            "attempts": attempts,
            "retry_wait_s": round(waited, 3),
            "queue_s": round(queued, 3),
            **res.extra,
        }
        return Completion(
            content=res.content,
            tool_calls=res.tool_calls,
            stop_reason=res.stop_reason,
            usage=res.usage,
            latency_s=latency,
            ttft_s=min(res.ttft_s, latency),
            model_id=res.model or self.model_id,
            request_hash=rhash,
            cost_usd=self.settings.price.cost(res.usage),
            extra=extra,
        )


def parse_tool_args(raw: str) -> dict[str, Any] | None:
    """The model's tool-call arguments, or None when they are not a JSON object."""
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return None
    return args if isinstance(args, dict) else None
