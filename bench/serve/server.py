"""A loopback server speaking the Anthropic Messages API and OpenAI Chat Completions, backed by
the simulated model, so the real SDKs and providers can be exercised end to end offline.

    python -m bench.serve --port 8765 [--fault 429:2] [--fault slow:1] [--key-env VAR] [--time-scale 1]

Anthropic SDK: base_url=http://127.0.0.1:8765       (POST /v1/messages, /v1/messages/count_tokens)
OpenAI SDK:    base_url=http://127.0.0.1:8765/v1    (POST /v1/chat/completions)

Both streaming (SSE; OpenAI's `stream_options.include_usage`) and plain JSON replies. The key
is accepted as `x-api-key` or `Authorization: Bearer`; with --key-env it must equal that
variable's value. Nothing the client sends in headers is logged. The seed comes from OpenAI's
`seed` or Anthropic's `metadata.user_id = "seed-<n>"`.

Faults (`--fault KIND[:count]`, repeatable, consumed in order; no count = every request; or one
request's `x-ctxbench-fault: KIND` header): 429 (with retry-after), 500, slow (answer after
--slow-s, past a client's timeout), truncate (a reply cut at max_tokens), malformed (200 with
broken JSON), cut (a stream that stops before its end), bad_tool_json (the model's tool-call
arguments are not JSON), error:VENDOR:CASE (a vendor's own error reply: bench/serve/errors.py).
Failing faults never reach the sim, so a retried request meets the sim in the same state.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import logging
import os
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from bench.core.types import Completion
from bench.providers.wire import anthropic as aw
from bench.providers.wire import openai as ow
from bench.serve import errors as vendor_errors
from bench.serve import limits as rate_limits
from bench.serve.backend import Backend, SimBackend

log = logging.getLogger("bench.serve.server")
FAULTS = ("429", "500", "slow", "truncate", "malformed", "cut", "bad_tool_json")
LOOPBACK = ("127.0.0.1", "localhost")


class FaultPlan:
    def __init__(self, specs: list[str] | tuple[str, ...] = ()) -> None:
        self._lock = threading.Lock()
        self._queue: list[list[Any]] = []
        for spec in specs:
            if spec.startswith("error:"):  # error:VENDOR:CASE[:count], a vendor's own error reply
                parts = spec.split(":")
                self.add(":".join(parts[:3]), int(parts[3]) if len(parts) > 3 else None)
                continue
            kind, _, count = spec.partition(":")
            self.add(kind, int(count) if count else None)

    def add(self, kind: str, count: int | None = None) -> None:
        if kind.startswith("error:"):
            vendor_errors.reply(kind)  # raises on an unknown vendor or case
        elif kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; choose one of {', '.join(FAULTS)}")
        with self._lock:
            self._queue.append([kind, count])

    def next(self) -> str | None:
        with self._lock:
            for item in self._queue:
                if item[1] is None or item[1] > 0:
                    if item[1] is not None:
                        item[1] -= 1
                    return str(item[0])
        return None


class LoopbackServer:
    """The server object tests use: `with LoopbackServer(backend) as srv: ... srv.url ...`."""

    def __init__(
        self,
        backend: Backend | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: list[str] | tuple[str, ...] = (),
        retry_after_s: float = 1.0,
        slow_s: float = 5.0,
        key_env: str | None = None,
        time_scale: float = 0.0,
        limits: rate_limits.ProviderLimits | None = None,
    ) -> None:
        if host not in LOOPBACK:
            raise ValueError(f"--host {host!r}: this server accepts any key and serves loopback only")
        self.backend: Backend = backend if backend is not None else SimBackend()
        self.faults = FaultPlan(faults)
        self.retry_after_s, self.slow_s, self.key_env = retry_after_s, slow_s, key_env
        self.time_scale = time_scale  # > 0: pace streams by the reply's own ttft_s / latency_s
        self.limits = limits  # a provider's RPM/TPM limits, emulated (bench/serve/limits.py)
        self.stopping = threading.Event()
        self.calls: list[tuple[str, str | None]] = []  # (path, fault) per model request, for tests
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.app = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LoopbackServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="ctxbench-loopback",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _cut_at_max_tokens(c: Completion, max_tokens: int) -> Completion:
    return dataclasses.replace(
        c,
        content=c.content[: max(len(c.content) // 3, 1)],
        tool_calls=(),
        stop_reason="max_tokens",
        usage=dataclasses.replace(c.usage, output=max_tokens),
    )


def _break_tool_json(c: Completion) -> Completion:
    call = c.tool_calls[0] if c.tool_calls else None
    raw = {
        "id": call.id if call else "call_broken",
        "name": call.name if call else "read_file",
        "arguments": (json.dumps(call.args) if call else '{"path": "x"}')[:-1],
    }
    return dataclasses.replace(
        c, tool_calls=c.tool_calls[1:], stop_reason="tool_use", extra={**c.extra, "raw_tool_calls": [raw]}
    )


class _Handler(BaseHTTPRequestHandler):
    server_version = "ctxbench-loopback/1"

    @property
    def app(self) -> LoopbackServer:
        return self.server.app  # type: ignore[attr-defined, no-any-return]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        log.debug("%s %s", self.command, urlsplit(self.path).path)  # never headers (they carry the key)

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(
        self, proto: str, status: int, kind: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        body: dict[str, Any] = (
            {"type": "error", "error": {"type": kind, "message": message}}
            if proto == "anthropic"
            else {"error": {"message": message, "type": kind, "code": None, "param": None}}
        )
        self._json(status, body, headers)

    def _authorised(self) -> bool:
        auth = self.headers.get("Authorization", "")
        key = self.headers.get("x-api-key") or (auth[7:] if auth.lower().startswith("bearer ") else "")
        if not key:
            return False
        if self.app.key_env is None:
            return True
        return hmac.compare_digest(key.encode(), os.environ.get(self.app.key_env, "").encode())

    def _sse(self, lines: Any, pauses: dict[int, float] | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for i, line in enumerate(lines):
            if pauses and pauses.get(i):
                self.app.stopping.wait(pauses[i])
            self.wfile.write(line.encode())
            self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path.rstrip("/")
        if path.endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "sim", "object": "model", "type": "model"}]})
        else:
            self._json(200 if path in ("", "/health") else 404, {"ok": path in ("", "/health")})

    def do_POST(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path.rstrip("/")
        proto = "anthropic" if "/messages" in path else "openai" if path.endswith("/chat/completions") else ""
        if not proto:
            return self._json(404, {"error": {"message": f"no route {path}"}})
        if not self._authorised():
            return self._error(proto, 401, "authentication_error", "missing or invalid API key")
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except json.JSONDecodeError:
            return self._error(proto, 400, "invalid_request_error", "request body is not JSON")
        if path.endswith("/count_tokens"):
            messages, _ = aw.from_wire(body)
            n = self.app.backend.count_tokens(tuple(messages), aw.tools_from_wire(body.get("tools")))
            return self._json(200, {"input_tokens": n})
        fault = self.headers.get("x-ctxbench-fault") or self.app.faults.next()
        self.app.calls.append((path, fault))
        try:
            self._model_call(proto, body, fault)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired first)
        except Exception as exc:  # the backend failed: a 500, as a real API would
            log.exception("backend error")
            self._error(proto, 500, "api_error", f"backend error: {type(exc).__name__}")
        return None

    def _model_call(self, proto: str, body: dict[str, Any], fault: str | None) -> None:
        stream = bool(body.get("stream"))
        if fault == "429":
            ra = f"{self.app.retry_after_s:g}"
            return self._error(proto, 429, "rate_limit_error", "rate limited (injected)", {"retry-after": ra})
        if fault == "500":
            return self._error(proto, 500, "api_error", "internal error (injected)")
        if fault and fault.startswith("error:"):
            return self._json(*vendor_errors.reply(fault))
        if self.app.limits is not None and (wait := self.app.limits.admit(proto, body)) is not None:
            return self._error(
                proto,
                429,
                "rate_limit_error",
                "rate limit exceeded (emulated)",
                rate_limits.retry_after_header(wait),
            )
        if fault == "slow":
            self.app.stopping.wait(self.app.slow_s)
            return self._error(proto, 500, "api_error", "too slow (injected)")
        if fault == "malformed":
            if stream:
                return self._sse(
                    ["event: message_start\n" if proto == "anthropic" else "", 'data: {"type": "mess\n\n']
                )
            data = b'{"id": "broken", "choices": [ {'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return None
        if proto == "anthropic":
            messages, breakpoint_ = aw.from_wire(body)
            tools, max_tokens, seed = (
                aw.tools_from_wire(body.get("tools")),
                body.get("max_tokens"),
                aw.seed_from_metadata(body),
            )
            if not isinstance(max_tokens, int):
                return self._error(proto, 400, "invalid_request_error", "max_tokens: field required")
        else:
            messages, breakpoint_ = ow.from_wire(body), None
            tools, seed = ow.tools_from_wire(body.get("tools")), ow.trial_seed(body)
            max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 4096)
        c = self.app.backend.complete(
            tuple(messages), tools, max_tokens=max_tokens, seed=seed, cache_breakpoint=breakpoint_
        )
        if self.app.limits is not None:
            self.app.limits.charge_output(c.usage.output)
        c = (
            _cut_at_max_tokens(c, max_tokens)
            if fault == "truncate"
            else _break_tool_json(c)
            if fault == "bad_tool_json"
            else c
        )
        model, created = str(body.get("model") or "sim"), int(time.time())
        if proto == "anthropic":
            mid = f"msg_{uuid.uuid4().hex[:24]}"
            if not stream:
                return self._json(200, aw.message_json(c, model, mid))
            events = list(aw.sse_events(c, model, mid))
            lines = [f"event: {ev}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n" for ev, data in events]
            first, last = 2, next(i for i, (ev, _) in enumerate(events) if ev == "message_delta")
        else:
            cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
            if not stream:
                return self._json(200, ow.completion_json(c, model, cid, created))
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = list(ow.sse_chunks(c, model, cid, created, usage))
            lines = [f"data: {json.dumps(d, ensure_ascii=False)}\n\n" for d in chunks] + ["data: [DONE]\n\n"]
            first = 1
            last = next(i for i, d in enumerate(chunks) if d["choices"] and d["choices"][0]["finish_reason"])
        # Pacing: the first token after the reply's ttft_s, the end after its latency_s (scaled).
        pauses = (
            {
                first: c.ttft_s * self.app.time_scale,
                last: max(c.latency_s - c.ttft_s, 0.0) * self.app.time_scale,
            }
            if self.app.time_scale > 0
            else None
        )
        return self._sse(lines[: len(lines) // 2] if fault == "cut" else lines, pauses)
