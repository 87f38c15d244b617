"""Usage, prefix cache, latency and cost of a simulated call, the way a real provider bills it.

Token counts come from the local cl100k BPE (bench.core.tokens). The prefix cache behaves like a
provider's automatic prompt cache (OpenAI, DeepSeek, Kimi; Anthropic with a breakpoint on the
newest message): a request reads from cache the longest prefix it shares byte for byte with
an earlier request of the same trial, counted at message boundaries, rounded down to whole
blocks, nothing below a minimum size, entries expiring `ttl` simulated seconds after their
last use. Whatever of the prompt is cacheable and was not read is written. The point is the
mechanism the strategies differ by: an append-only transcript re-reads its whole history, a
compaction or a rebuilt context breaks the prefix where it changes.

Simulated time advances by each call's own latency, so the TTL is about the pace of the
conversation the sim produces, not about how fast the host runs it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from bench.core.tokens import count_message, count_text, tools_tokens
from bench.core.types import Message, Price, ToolSpec, Usage, canonical_json
from bench.sim.params import SimParams


@dataclass(frozen=True)
class Bill:
    usage: Usage
    ttft_s: float
    latency_s: float
    cost_usd: float
    prompt_tokens: int


def output_tokens(content: str, calls: tuple[tuple[str, dict], ...]) -> int:
    return count_text(content) + sum(
        count_text(name) + count_text(canonical_json(args)) for name, args in calls
    )


class PrefixCache:
    """One per SimProvider instance, i.e. per trial."""

    def __init__(self, p: SimParams) -> None:
        self.block = p.cache_block_tokens
        self.min_tokens = p.cache_min_tokens
        self.ttl = p.cache_ttl_s
        self.clock = 0.0  # simulated seconds since the trial's first call
        self._used: dict[str, float] = {}  # prefix hash -> simulated time of its last use

    def _blocks(self, tokens: int) -> int:
        return 0 if tokens < self.min_tokens else tokens // self.block * self.block

    def request(self, hashes: list[str], cumulative: list[int]) -> tuple[int, int]:
        """(cache_read, cache_write) for a prompt whose i-th message boundary has prefix hash
        `hashes[i]` and `cumulative[i]` tokens before it ends; then remembers its prefixes."""
        self._used = {h: t for h, t in self._used.items() if self.clock - t <= self.ttl}
        hit = -1
        for i in range(len(hashes) - 1, -1, -1):
            if hashes[i] in self._used:
                hit = i
                break
        read = self._blocks(cumulative[hit]) if hit >= 0 else 0
        write = max(0, self._blocks(cumulative[-1]) - read) if cumulative else 0
        for h in hashes:
            self._used[h] = self.clock
        return read, write


class Meter:
    """Bills calls: tokens, cache, latency and cost, for one trial.

    A trial resends the same Message objects turn after turn, so each message's canonical
    JSON, hash and token count are computed once (keyed by identity, the object kept alive
    by the cache so an id is never reused). The request hash is the same value as
    `bench.core.types.request_hash`, assembled from those cached pieces."""

    def __init__(self, p: SimParams, price: Price) -> None:
        self.p = p
        self.price = price
        self.cache = PrefixCache(p)
        self._msgs: dict[int, tuple[Message, str, str, int]] = {}
        self._tools: dict[int, tuple[tuple[ToolSpec, ...], str, int]] = {}

    def message(self, m: Message) -> tuple[str, str, int]:
        """(canonical JSON, sha256 of it, tokens) of one message."""
        hit = self._msgs.get(id(m))
        if hit is None or hit[0] is not m:
            text = canonical_json(m.to_dict())
            hit = (m, text, hashlib.sha256(text.encode()).hexdigest(), count_message(m))
            self._msgs[id(m)] = hit
        return hit[1], hit[2], hit[3]

    def tools(self, tools: tuple[ToolSpec, ...]) -> tuple[str, int]:
        hit = self._tools.get(id(tools))
        if hit is None or hit[0] is not tools:
            hit = (tools, *tools_tokens(tools))
            self._tools[id(tools)] = hit
        return hit[1], hit[2]

    def prompt_tokens(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...]) -> int:
        return self.tools(tools)[1] + sum(self.message(m)[2] for m in messages)

    def request_hash(
        self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...], max_tokens: int, seed: int
    ) -> str:
        # canonical_json of {"max_tokens", "messages", "seed", "tools"}: keys sorted, no spaces.
        body = ",".join(self.message(m)[0] for m in messages)
        text = (
            f'{{"max_tokens":{canonical_json(max_tokens)},"messages":[{body}],'
            f'"seed":{canonical_json(seed)},"tools":{self.tools(tools)[0]}}}'
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def bill(self, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...], out_tokens: int) -> Bill:
        tools_text, tokens = self.tools(tools)
        h = hashlib.sha256(tools_text.encode())
        hashes, cumulative = [], []
        for m in messages:
            _, sha, n = self.message(m)
            h = hashlib.sha256(h.digest() + sha.encode())
            tokens += n
            hashes.append(h.hexdigest())
            cumulative.append(tokens)
        read, write = self.cache.request(hashes, cumulative)
        usage = Usage(input=tokens - read - write, output=out_tokens, cache_read=read, cache_write=write)
        p = self.p
        ttft = (
            p.latency_base_s
            + p.latency_s_per_uncached_token * (usage.input + write)
            + p.latency_s_per_cached_token * read
        )
        latency = ttft + p.decode_s_per_token * out_tokens
        self.cache.clock += latency
        cost = self.price.cost(usage)
        return Bill(usage, ttft, latency, cost, tokens)
