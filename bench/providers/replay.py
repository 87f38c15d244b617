"""Record and replay model calls, keyed by `bench.core.types.request_hash`.

`model.record=PATH` wraps any provider in `RecordingProvider`, which appends one JSON line per
call to the cassette: `{"v": 1, "request_hash": ..., "completion": {...}}`, or
`{"v": 1, "request_hash": ..., "error": "..."}` when the call raised ProviderError (so a replay
reproduces that failure too). `model=replay model.cassette=PATH` plays it back offline: the
same request gets the recorded Completion (identical requests replay in recorded order; past
the end the last one repeats); a request never recorded raises ProviderError.

Cassettes hold what the provider returned (content, tool calls, usage, latencies) and the
request hash, never the request's headers or the API key.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.core.types import (
    Completion,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
    canonical_json,
    plain,
    request_hash,
)
from bench.providers.base import Provider, ProviderError
from bench.providers.http.config import COMMON_KEYS, ModelConfigError, check_keys

CASSETTE_VERSION = 1


def completion_to_dict(c: Completion) -> dict[str, Any]:
    return asdict(c)


def completion_from_dict(d: Mapping[str, Any]) -> Completion:
    return Completion(
        content=d["content"],
        tool_calls=tuple(ToolCall(**t) for t in d.get("tool_calls", ())),
        stop_reason=d["stop_reason"],
        usage=Usage(**d["usage"]),
        latency_s=d["latency_s"],
        ttft_s=d["ttft_s"],
        model_id=d["model_id"],
        request_hash=d["request_hash"],
        cost_usd=d.get("cost_usd", 0.0),
        extra=dict(d.get("extra") or {}),
    )


class RecordingProvider:
    """Passes calls through to `inner` and appends each outcome to the cassette (flushed per line)."""

    def __init__(self, inner: Provider, path: str | Path) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion:
        rhash = request_hash(messages, tools, max_tokens, seed)
        try:
            c = self.inner.complete(
                messages, tools, max_tokens=max_tokens, seed=seed, cache_breakpoint=cache_breakpoint
            )
        except ProviderError as exc:
            self._append({"v": CASSETTE_VERSION, "request_hash": rhash, "error": str(exc)})
            raise
        self._append({"v": CASSETTE_VERSION, "request_hash": rhash, "completion": completion_to_dict(c)})
        return c

    def _append(self, record: dict[str, Any]) -> None:
        line = canonical_json(record) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()

    def close(self) -> None:
        self.inner.close()


class ReplayProvider:
    """Plays a cassette back: no network, no key, same Completion for the same request."""

    def __init__(self, path: str | Path, model_id: str | None = None) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise ModelConfigError(
                f"model.cassette={str(self.path)!r} does not exist: record one first with "
                "model.record=PATH on the original model"
            )
        self._entries: dict[str, list[dict[str, Any]]] = {}
        with self.path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    self._entries.setdefault(rec["request_hash"], []).append(rec)
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise ModelConfigError(
                        f"cassette {self.path} line {n} is not a cassette record: {exc}"
                    ) from exc
        first = next(
            (r["completion"] for rs in self._entries.values() for r in rs if "completion" in r), None
        )
        self.model_id = model_id or (first["model_id"] if first else "replay")
        self._cursor: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, model_cfg: Mapping[str, Any]) -> ReplayProvider:
        model_cfg = plain(model_cfg)
        check_keys(model_cfg, COMMON_KEYS | {"cassette"}, "replay")
        if not model_cfg.get("cassette") or model_cfg["cassette"] == "???":
            raise ModelConfigError(
                "model.cassette is missing: model=replay model.cassette=/abs/path/to/cassette.jsonl"
            )
        return cls(model_cfg["cassette"], model_cfg.get("model_id"))

    def complete(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        *,
        max_tokens: int,
        seed: int,
        cache_breakpoint: int | None = None,
    ) -> Completion:
        rhash = request_hash(messages, tools, max_tokens, seed)
        with self._lock:
            records = self._entries.get(rhash)
            if not records:
                raise ProviderError(
                    f"cassette has no entry for request {rhash}; re-record with "
                    f"model.record=PATH on the original model (cassette: {self.path})"
                )
            i = self._cursor.get(rhash, 0)
            self._cursor[rhash] = i + 1
            rec = records[min(i, len(records) - 1)]
        if "error" in rec:
            raise ProviderError(rec["error"])
        return completion_from_dict(rec["completion"])

    def close(self) -> None:
        pass
