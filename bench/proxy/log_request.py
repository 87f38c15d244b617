"""How the model proxy writes one request into the trial's event log (docs/design.md §6).

Per request, adjacent and in this order: `agent_request` (the body byte for byte, and the label of
the proxy's rewrite when one applied: bench/proxy/rewrite.py; a `context_truncation` follows when it
dropped turns), then for a
forwarded request the `message` records new to the log, its `context` and its `model_call`
(request hash over the decoded messages, the request's own tools and reply limit, the trial's
seed), or for a refused one a `context_overflow`; last the `agent_reply` (the bytes sent back).
`verify` decodes each body again and checks it against the context and the request hash.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, Protocol

from bench.core.types import Completion, Message, request_hash
from bench.proxy.api import Request
from ctxlog import events as ev

ERROR_DETAIL_CHARS = 500  # bench/eventlog/writer.py's; not imported: verify.py there imports this package
PURPOSE = {"main": "turn", "compaction": "compaction", "side": "side", "subagent": "subagent"}


def body_text(raw: bytes) -> str:
    """A body as logged: its UTF-8 text (a JSON body is UTF-8); undecodable bytes as surrogates,
    which canonical_json writes as escapes that read back to the same bytes."""
    return raw.decode("utf-8", errors="surrogateescape")


def sha(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


class EventLog(Protocol):
    """bench.eventlog.writer.EventLog, as the recorder uses it."""

    def append(self, event: ev.Event) -> dict[str, Any]: ...

    def context(
        self, turn: int, messages: tuple[Message, ...], tokens: int, stable: int, purpose: str = "turn"
    ) -> str: ...


class Recorder:
    """Writes a proxy's requests into one EventLog; one request at a time (the lock), so a
    request's records are adjacent even when an agent sends two at once."""

    def __init__(self, log: EventLog, seed: int) -> None:
        self.log, self.seed = log, seed
        self.lock = threading.RLock()

    def request(
        self,
        turn: int,
        api: str,
        path: str,
        thread: str,
        raw: bytes,
        *,
        tokens: int = 0,
        max_tokens: int = 0,
        window: int = 0,
        overhead: int = 0,
        signal: str | None = None,
        rewrite: str | None = None,
    ) -> None:
        self.log.append(
            ev.AgentRequest(
                turn=turn,
                api=api,
                path=path,
                thread=thread,
                body=body_text(raw),
                body_sha=sha(raw),
                tokens=tokens,
                max_tokens=max_tokens,
                window=window,
                overhead=overhead,
                signal=signal,
                rewrite=rewrite,
            )
        )

    def truncated(self, turn: int, dropped: int, before: int, after: int) -> None:
        """The proxy's `trim` dropped whole turns of the agent's request (bench/proxy/rewrite.py)."""
        self.log.append(
            ev.ContextTruncation(
                turn=turn, dropped_messages=dropped, tokens_before=before, tokens_after=after
            )
        )

    def call(
        self,
        turn: int,
        thread: str,
        req: Request,
        max_tokens: int,
        tokens: int,
        reply: Completion,
        timings: dict[str, float],
    ) -> None:
        purpose = PURPOSE[thread]
        self.log.context(turn, req.messages, tokens=tokens, stable=0, purpose=purpose)
        self.log.append(
            ev.ModelCall(
                turn=turn,
                purpose=purpose,
                model_id=reply.model_id,
                request_hash=request_hash(req.messages, req.tools, max_tokens, self.seed),
                tokens_harness=tokens,
                usage_estimated=bool(reply.extra.get("usage_estimated")),
                provider_request_hash=reply.request_hash,
                stop_reason=reply.stop_reason,
                usage=reply.usage.__dict__,
                cost_usd=reply.cost_usd,
                content=reply.content,
                tool_calls=[c.__dict__ for c in reply.tool_calls],
                decisions=reply.extra.get("decisions"),
                slips=reply.extra.get("slips"),
                t={"latency_s": reply.latency_s, "ttft_s": reply.ttft_s, **timings},
            )
        )

    def refused(self, turn: int, thread: str, req: Request, tokens: int, window: int, detail: str) -> None:
        self.log.context(turn, req.messages, tokens=tokens, stable=0, purpose=PURPOSE[thread])
        self.log.append(
            ev.ContextOverflow(
                turn=turn, tokens=tokens, budget=window, window=window, detail=detail[:ERROR_DETAIL_CHARS]
            )
        )

    def reply(
        self,
        turn: int,
        api: str,
        status: int,
        stream: bool,
        raw: bytes,
        usage: dict[str, Any] | None = None,
        t: dict[str, Any] | None = None,
    ) -> None:
        self.log.append(
            ev.AgentReply(
                turn=turn,
                api=api,
                status=status,
                stream=stream,
                body=body_text(raw),
                body_sha=sha(raw),
                usage=usage or {},
                t=t or {},
            )
        )
