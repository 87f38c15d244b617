"""A provider's rate limits, emulated by the loopback server (bench.serve.server), so the shared
limiter (bench/providers/http/ratelimit.py) is tested offline.

    python -m bench.serve --limit-rpm 600 --limit-input-tpm 400000 [--limit-output-tpm N]

Like the hosted APIs: a token bucket per limit holding a minute's allowance, refilled
continuously. A request is admitted when a request and its input tokens are available and the
output bucket is not in debt; output tokens are charged when the reply is made. Otherwise the
answer is a 429 with `retry-after` in whole seconds (rounded up to when the request would fit),
and the request never reaches the model. Input tokens are the whole prompt, tool schemas included,
cached or not, counted (cl100k, bench.core.tokens) as the reply's `usage` counts them: a bucket
that counted fewer than `usage` reports would let a client that paces itself by `usage` reach
only part of the limit.
"""

from __future__ import annotations

import argparse
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.core.tokens import count_messages, tools_tokens
from bench.providers.http.ratelimit import refill
from bench.providers.wire import anthropic as aw
from bench.providers.wire import openai as ow


class ProviderLimits:
    def __init__(
        self,
        rpm: float | None = None,
        input_tpm: float | None = None,
        output_tpm: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rates = {"rpm": rpm, "input_tpm": input_tpm, "output_tpm": output_tpm}
        self.levels = {k: float(v) for k, v in self.rates.items() if v is not None}
        self._clock = clock
        self._t = clock()
        self._lock = threading.Lock()
        self.admitted = 0
        self.rejected = 0  # 429s sent
        self.input_tokens = 0
        self.output_tokens = 0
        self.first_t: float | None = None

    @staticmethod
    def prompt_tokens(proto: str, body: dict[str, Any]) -> int:
        wire = aw if proto == "anthropic" else ow
        messages = aw.from_wire(body)[0] if proto == "anthropic" else ow.from_wire(body)
        return count_messages(tuple(messages)) + tools_tokens(wire.tools_from_wire(body.get("tools")))[1]

    def _refill(self) -> None:
        now = self._clock()
        for k, level in self.levels.items():
            rate = self.rates[k]
            assert rate is not None
            self.levels[k] = refill(level, rate, rate, now - self._t)
        self._t = now

    def admit(self, proto: str, body: dict[str, Any]) -> float | None:
        """None: admitted (its request and input tokens taken). Else the seconds until it would fit."""
        tokens = self.prompt_tokens(proto, body)
        with self._lock:
            self._refill()
            need = {"rpm": 1.0, "input_tpm": float(tokens), "output_tpm": 0.0}
            waits = [0.0]
            for k, level in self.levels.items():
                rate = self.rates[k]
                assert rate is not None
                want = min(need[k], rate)  # a prompt above a minute's allowance fits a full bucket
                waits.append((want - level) * 60.0 / rate)
            wait = max(waits)
            if wait > 0:
                self.rejected += 1
                return wait
            for k in ("rpm", "input_tpm"):
                if k in self.levels:
                    self.levels[k] -= min(need[k], self.rates[k] or 0.0)
            self.admitted += 1
            self.input_tokens += tokens
            self.first_t = self._t if self.first_t is None else self.first_t
            return None

    def charge_output(self, tokens: int) -> None:
        with self._lock:
            self._refill()
            if "output_tpm" in self.levels:
                self.levels["output_tpm"] -= tokens
            self.output_tokens += tokens

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "admitted": self.admitted,
                "rejected": self.rejected,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
            }


def retry_after_header(wait_s: float) -> dict[str, str]:
    return {"retry-after": str(max(1, math.ceil(wait_s)))}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit-rpm", type=float, default=None, help="emulate a requests-per-minute limit (429s)")
    p.add_argument(
        "--limit-input-tpm", type=float, default=None, help="emulate an input-tokens-per-minute limit"
    )
    p.add_argument(
        "--limit-output-tpm", type=float, default=None, help="emulate an output-tokens-per-minute limit"
    )


def from_args(a: argparse.Namespace) -> ProviderLimits | None:
    if a.limit_rpm is None and a.limit_input_tpm is None and a.limit_output_tpm is None:
        return None
    return ProviderLimits(a.limit_rpm, a.limit_input_tpm, a.limit_output_tpm)
