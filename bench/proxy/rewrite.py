"""Proxy-side rewrites of an agent's requests (`agent.proxy_rewrite`; docs/agents.md "Rewrites").

For an agent whose message list is not ours (Claude Code, Codex: it lives in their process), the
proxy can still change what the model sees, request by request, as a labelled switch:

    masking   the tool results of all but the newest `keep_recent_turns` assistant turns become a
              one-line placeholder (strategies/masking.py's, the same text)
    trim      the oldest whole turns are dropped until the messages fit `budget_tokens` (the
              leading system messages and the first user message, the task, always stay)

Only the agent's main thread is rewritten (its turns); its own compaction, side calls and
subagents go as they came. A rewrite is a pure function of the decoded request and its label, so
the record keeps the agent's request byte for byte (`agent_request.body`) with the label
(`agent_request.rewrite`), the model's request as its `context`, and `verify` applies the label to
the body again and checks it gives that context. `none` (the default) rewrites nothing and records
nothing, so a trial without it is what it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from bench.config import ConfigError
from bench.proxy.api import Request
from strategies import _common
from strategies.masking import masked

NAMES = ("none", "masking", "trim")
KEYS = ("name", "keep_recent_turns", "budget_tokens")


@dataclass(frozen=True)
class Rewrite:
    name: str  # masking | trim
    keep_recent_turns: int = 10  # masking: assistant turns whose tool results stay verbatim
    budget_tokens: int = 0  # trim: the messages' tokens after the rewrite (the proxy's count)

    @property
    def label(self) -> str:
        """What the record says was applied; `from_label` reads it back (verify)."""
        knob = (
            f"keep_recent_turns={self.keep_recent_turns}"
            if self.name == "masking"
            else f"budget_tokens={self.budget_tokens}"
        )
        return f"{self.name}:{knob}"

    @classmethod
    def from_label(cls, label: str) -> Rewrite:
        name, _, knob = label.partition(":")
        key, _, value = knob.partition("=")
        rewrite = parse_rewrite({"name": name, key: int(value)})
        if rewrite is None or rewrite.label != label:
            raise ValueError(f"not a proxy rewrite label: {label!r}")
        return rewrite

    def apply(self, req: Request) -> tuple[Request, int]:
        """(the request the model sees, messages dropped)."""
        if self.name == "masking":
            return replace(req, messages=masked(req.messages, self.keep_recent_turns)), 0
        lead = 0
        while lead < len(req.messages) and req.messages[lead].role == "system":
            lead += 1
        head = lead + 1 if lead < len(req.messages) and req.messages[lead].role == "user" else lead
        fitted = _common.fit(req.messages[:head], req.messages[head:], self.budget_tokens)
        return replace(req, messages=fitted.messages), fitted.dropped


def parse_rewrite(d: Mapping[str, Any] | None) -> Rewrite | None:
    """`agent.proxy_rewrite` validated; None for `none` (or left out). Bad input is one line."""
    if not d:
        return None
    bad = sorted(set(d) - set(KEYS))
    if bad:
        raise ConfigError(f"agent.proxy_rewrite.{bad[0]}: unknown key; a proxy rewrite has {', '.join(KEYS)}")
    name = str(d.get("name") or "none")
    if name not in NAMES:
        raise ConfigError(f"agent.proxy_rewrite.name={name!r} is not one of {', '.join(NAMES)}")
    if name == "none":
        return None
    keep, budget = d.get("keep_recent_turns", 10), d.get("budget_tokens", 0)
    for key, value, low in (("keep_recent_turns", keep, 0), ("budget_tokens", budget, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ConfigError(f"agent.proxy_rewrite.{key} must be an integer >= {low}, got {value!r}")
    if name == "trim" and budget <= 0:
        raise ConfigError(
            "agent.proxy_rewrite.budget_tokens must be > 0 for trim: the tokens the messages are trimmed to"
        )
    return Rewrite(
        name,
        keep_recent_turns=keep if name == "masking" else 10,
        budget_tokens=budget if name == "trim" else 0,
    )
