"""The model proxy (docs/agents.md): an external agent's only way to a model.

    with ModelProxy(provider, log, seed=seed, window=12000, socket_path=Path(".../m.sock")) as proxy:
        proxy.url           # http://127.0.0.1:PORT, for an agent on the host
        proxy.socket_path   # a unix socket, bind-mounted into a sandbox that has no network

It serves Anthropic Messages (`/v1/messages`, `/v1/messages/count_tokens`), OpenAI Chat
Completions (`/v1/chat/completions`) and the OpenAI Responses API (`/v1/responses`), streamed
(SSE) and not, decoding each request into harness messages (bench/proxy/api.py) and forwarding
it to the trial's provider (sim, replay, local or real: bench.providers, so the limiter, budget,
retries and error table of bench/providers/http/ hold). Every request and reply goes into the
trial's event log byte for byte (bench/proxy/log_request.py); a reply's ids follow from the request,
the seed and the proxy's count, never a clock or chance (bench/proxy/api.py), so the same trial
records the same replies.

Window pressure as a provider applies it: a request longer than the window is refused with the
emulated provider's own status and body (Anthropic's `prompt is too long: N tokens > M maximum`,
OpenAI's `context_length_exceeded`) and never reaches the model. With `relative=True` the window
is counted above the agent's fixed overhead (system + tools of its first main request), so the
agent's own compaction request can still fit; both numbers are logged with every request.

Failures stay apart (docs/design.md §9): the provider failing after its retries is answered
with a 5xx and kept in `infra_failure` (the trial's `provider_error`, never the agent's); the
agent's bad request is answered 400 and is the agent's.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.core.tokens import count_messages, tools_tokens
from bench.providers.base import ContextOverflow, Provider, ProviderError
from bench.proxy import api as proxy_api
from bench.proxy.log_request import EventLog, Recorder, sha
from bench.proxy.rewrite import Rewrite
from bench.proxy.threads import Threads, agent_signal

log = logging.getLogger("bench.proxy")
# a request past this is the agent's bad request, not a reason to run out of memory
MAX_BODY_BYTES = 64 * 2**20


def request_tokens(req: proxy_api.Request) -> int:
    """A request by the proxy's count: its messages and tool schemas (as the sim bills them)."""
    return count_messages(req.messages) + tools_tokens(req.tools)[1]


def overhead_tokens(req: proxy_api.Request) -> int:
    """The agent's fixed overhead in a request: its system messages and tool schemas."""
    return count_messages(tuple(m for m in req.messages if m.role == "system")) + tools_tokens(req.tools)[1]


class ModelProxy:
    def __init__(
        self,
        provider: Provider,
        log_: EventLog,
        *,
        seed: int,
        window: int = 0,
        relative: bool = False,
        max_output: int | None = None,
        socket_path: Path | None = None,
        tcp: bool = True,
        model_name: str = "",
        rewrite: Rewrite | None = None,
    ) -> None:
        self.provider, self.seed = provider, seed
        self.rewrite = rewrite  # what the proxy does to the main thread's requests (bench/proxy/rewrite.py)
        self.recorder = Recorder(log_, seed)
        self.window, self.relative, self.max_output = int(window), relative, max_output
        self.model_name = model_name or getattr(provider, "model_id", "model")
        self.threads = Threads()
        self.overhead: int | None = None  # measured from the agent's first main request
        self.turn = 0  # the next main-thread request's turn number (a player may set it)
        self.counts: dict[str, int] = {}  # requests by thread (and refused ones as "refused")
        self.answered = 0  # model replies sent: with the seed and the request's sha, a reply's id
        self.infra_failure: str | None = None  # the first failure that is not the agent's
        # Asked before each acting request (main thread or subagent: it offers tools) is forwarded, by a
        # player whose agent makes its model calls out of the harness's sight (Claude Code in the
        # sandbox, where any process can reach the socket): the referee's turn number, or an exception
        # when a turn limit says no; the agent then gets a 400 naming it, and its turn ends.
        self.gate: Callable[[], int] | None = None
        self.socket_path, self.tcp = socket_path, tcp
        self._servers: list[socketserver.BaseServer] = []
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        tcp = next(s for s in self._servers if isinstance(s, _TCPServer))
        return f"http://127.0.0.1:{tcp.server_address[1]}"

    @property
    def requests(self) -> int:
        """Model requests answered or refused (count_tokens not included)."""
        return sum(v for k, v in self.counts.items() if k != "count_tokens")

    def effective_window(self) -> int:
        if not self.window:
            return 0
        return self.window + (self.overhead or 0) if self.relative else self.window

    def start(self) -> ModelProxy:
        """Listen (again: a player may serve each turn and stop between turns; the counts, the
        threads and the measured overhead are the trial's and stay)."""
        self.stop()
        if self.tcp:
            self._servers.append(_TCPServer(("127.0.0.1", 0), _Handler))
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)
            self._servers.append(_UnixServer(str(self.socket_path), _Handler))
            os.chmod(self.socket_path, 0o666)  # the agent in the sandbox runs as another uid
        for s in self._servers:
            s.app = self  # type: ignore[attr-defined]
        for s in self._servers:
            t = threading.Thread(
                target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="ctxbench-proxy"
            )
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        for s in self._servers:
            s.shutdown()
            s.server_close()
        for t in self._threads:
            t.join(timeout=5)
        self._servers, self._threads = [], []
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> ModelProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- one request ------------------------------------------------------------------------
    def handle(self, path: str, raw: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
        """(status, content type, body) for one POST; everything is recorded on the way."""
        which = proxy_api.api_for(path)
        if which is None:
            return 404, proxy_api.JSON, json.dumps({"error": {"message": f"no route {path}"}}).encode()
        api = proxy_api.APIS["anthropic" if which == "anthropic_count" else which]
        with self.recorder.lock:
            t0 = time.monotonic()
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("not an object")
                req = api.decode(body)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                self.recorder.request(self.turn, which, path, "main", raw)
                return self._reply(
                    which,
                    *api.error(
                        400, "invalid_request_error", f"request body is not a valid {api.name} request: {exc}"
                    ),
                    t0,
                )
            tokens = request_tokens(req)
            if which == "anthropic_count":
                self.counts["count_tokens"] = self.counts.get("count_tokens", 0) + 1
                self.recorder.request(self.turn, which, path, "count_tokens", raw, tokens=tokens)
                return self._reply(
                    which, 200, proxy_api.JSON, json.dumps({"input_tokens": tokens}).encode(), t0
                )
            signal = agent_signal(headers)
            thread = self.threads.classify(req.messages, req.tools, signal)
            if thread == "main" and self.overhead is None:
                self.overhead = overhead_tokens(req)
            if thread in ("main", "subagent") and self.gate is not None:  # the turns that act (with tools)
                try:
                    self.turn = self.gate()
                except Exception as exc:  # a harness limit: the player knows which (it raised it)
                    self.counts["stopped"] = self.counts.get("stopped", 0) + 1
                    self.recorder.request(self.turn, which, path, thread, raw, tokens=tokens, signal=signal)
                    return self._reply(
                        which,
                        *api.error(400, "invalid_request_error", f"ctxbench ended this turn: {exc}"),
                        t0,
                    )
            max_tokens = min(req.max_tokens, self.max_output) if self.max_output else req.max_tokens
            window, turn = self.effective_window(), self.turn
            label, dropped, before = None, 0, tokens
            if (
                self.rewrite is not None and thread == "main"
            ):  # the agent's bytes stay the record, with the label
                req, dropped = self.rewrite.apply(req)
                label, tokens = self.rewrite.label, request_tokens(req)
            self.recorder.request(
                turn,
                which,
                path,
                thread,
                raw,
                tokens=before,
                max_tokens=max_tokens,
                window=window,
                overhead=self.overhead or 0,
                signal=signal,
                rewrite=label,
            )
            if dropped:
                self.recorder.truncated(turn, dropped, before, tokens)
            if window and tokens > window:
                self.counts["refused"] = self.counts.get("refused", 0) + 1
                status, ctype, data = api.refusal(tokens, window)
                self.recorder.refused(turn, thread, req, tokens, window, data.decode())
                return self._reply(which, status, ctype, data, t0)
            self.counts[thread] = self.counts.get(thread, 0) + 1
            try:
                reply = self.provider.complete(req.messages, req.tools, max_tokens=max_tokens, seed=self.seed)
            except ContextOverflow as exc:  # the real model's own window: the agent's context, as above
                status, ctype, data = api.refusal(tokens, window or tokens - 1)
                self.recorder.refused(turn, thread, req, tokens, window, str(exc))
                return self._reply(which, status, ctype, data, t0)
            except ProviderError as exc:  # after the provider's own retries: infrastructure
                self.infra_failure = self.infra_failure or f"provider_error: {exc}"
                return self._reply(
                    which, *api.error(500, "api_error", "the model behind the proxy failed"), t0
                )
            except Exception as exc:  # the model behind the proxy crashed: the harness's failure
                log.exception("model proxy: the provider crashed")
                self.infra_failure = self.infra_failure or f"harness_error: {type(exc).__name__}: {exc}"
                return self._reply(
                    which, *api.error(500, "api_error", "the model behind the proxy failed"), t0
                )
            if thread == "main":
                self.turn += 1
            self.recorder.call(
                turn, thread, req, max_tokens, tokens, reply, {"proxy_s": time.monotonic() - t0}
            )
            rid = proxy_api.reply_id(sha(raw), self.seed, self.answered)
            self.answered += 1
            status, ctype, data = api.reply(reply, req.model or self.model_name, req.stream, rid)
            return self._reply(which, status, ctype, data, t0, reply.usage.__dict__, turn, req.stream)

    def _reply(
        self,
        which: str,
        status: int,
        ctype: str,
        data: bytes,
        t0: float,
        usage: dict[str, Any] | None = None,
        turn: int | None = None,
        stream: bool = False,
    ) -> tuple[int, str, bytes]:
        self.recorder.reply(
            self.turn if turn is None else turn,
            which,
            status,
            stream,
            data,
            usage,
            {"proxy_s": time.monotonic() - t0},
        )
        return status, ctype, data


class _TCPServer(ThreadingHTTPServer):
    daemon_threads = True

    def get_request(self) -> tuple[socket.socket, Any]:
        # A reply is two writes (headers, then body): with Nagle's algorithm on, the body waits for
        # the ACK of the headers, which the agent's TCP stack delays ~40 ms (make bench: proxy overhead)
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class _Handler(BaseHTTPRequestHandler):
    server_version = "ctxbench-proxy/1"
    protocol_version = "HTTP/1.1"  # keep-alive: agents reuse their connection

    @property
    def app(self) -> ModelProxy:
        return self.server.app  # type: ignore[attr-defined, no-any-return]

    def address_string(self) -> str:  # a unix socket's peer has no address
        return "proxy-client"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        log.debug("%s %s", self.command, urlsplit(self.path).path)  # never headers (they carry keys)

    def _send(self, status: int, ctype: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if ctype == proxy_api.SSE:
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802
        path = urlsplit(self.path).path.rstrip("/")
        if path.endswith("/models"):
            body = {
                "object": "list",
                "data": [{"id": self.app.model_name, "object": "model", "type": "model"}],
            }
            self._send(200, proxy_api.JSON, json.dumps(body).encode())
        else:
            self._send(200 if path in ("", "/health") else 404, proxy_api.JSON, b'{"ok": true}')

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send(
                413,
                proxy_api.JSON,
                b'{"error": {"message": "request body too large", "type": "invalid_request_error"}}',
            )
            self.close_connection = True
            return
        raw = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            answer = self.app.handle(urlsplit(self.path).path, raw, headers)
        except Exception as exc:  # the proxy itself broke (its codecs, its recorder): ours, never the agent's
            log.exception("model proxy: handling a request crashed")
            self.app.infra_failure = self.app.infra_failure or f"harness_error: {type(exc).__name__}: {exc}"
            which = proxy_api.api_for(urlsplit(self.path).path) or "anthropic"
            answer = proxy_api.APIS["anthropic" if which == "anthropic_count" else which].error(
                500, "api_error", "the model proxy failed"
            )
        try:
            self._send(*answer)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent hung up
