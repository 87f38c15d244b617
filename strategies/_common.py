"""Helpers the four strategies share: turn grouping, dropping old turns to fit a budget,
compaction bookkeeping (which part of the transcript a summary stands in for), and the
knob types every strategy's schema uses.

Everything here is pure over its arguments. Token counts go through `bench.core.tokens`, whose
`count_text` is cached, so re-counting an unchanged message costs a dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StrictFloat, StrictInt, StrictStr

from bench.core import render
from bench.core.tokens import count_message, count_text
from bench.core.types import Message, canonical_json
from strategies.base import Built, State, stable_prefix

COMPACTION_MARKER = "[compaction-request]"

DEFAULT_COMPACTION_PROMPT = f"""{COMPACTION_MARKER}
The conversation above is about to be replaced by your summary: write the handoff a fresh
engineer needs to continue this task without the transcript. Plain text, at most ~600 words.
Keep, in this order:
1. Every standing constraint, copied verbatim as its `[inv:ID] text` line, including the
   invariants that completed steps established. Never merge, reword or drop one.
2. The steps already passed (`[check:ID passed]`), with what later steps must not undo.
3. The current step: its id, what is done, what is left, and the last failure if any.
4. Files changed so far and why; files only read. Do not copy file contents: the files
   will be re-read from the repository.
5. Decisions taken, and dead ends not to retry.
Drop: old tool output, superseded plans, stale file contents, repeated errors."""


def validate_prompt(prompt: str) -> str:
    """A compaction prompt must carry the `[compaction-request]` marker on a line of its own
    (the simulated summariser recognises its job by it)."""
    if COMPACTION_MARKER not in (line.strip() for line in prompt.splitlines()):
        raise ValueError(f"`prompt` must contain the line {COMPACTION_MARKER!r}")
    return prompt


# The knob types the strategies' schemas share (bench/core/knobs.py).
Fraction = Annotated[StrictFloat, Field(gt=0.0, le=1.0)]
KeepRecent = Annotated[StrictInt, Field(ge=0, le=2)]  # assistant turns kept verbatim after a summary
InvariantsFrom = Literal["model", "harness"]
# null = the built-in DEFAULT_COMPACTION_PROMPT; stated as null in the schema so the resolved
# config carries null, not the prompt's text.
CompactionPrompt = Annotated[
    StrictStr,
    BeforeValidator(lambda v: DEFAULT_COMPACTION_PROMPT if v is None else v),
    AfterValidator(validate_prompt),
]


# ---------------------------------------------------------------- token counting


def tokens(messages: Sequence[Message]) -> int:
    return sum(count_message(m) for m in messages)


# ---------------------------------------------------------------- turn grouping


def groups(messages: Sequence[Message], start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Split `messages[start:end]` into turns, as (begin, stop) index pairs.

    A turn is an assistant message together with the tool results that follow it (so a
    tool result is never separated from its call); any other message is a turn alone.
    """
    end = len(messages) if end is None else end
    out: list[tuple[int, int]] = []
    i = start
    while i < end:
        j = i + 1
        if messages[i].role == "assistant":
            while j < end and messages[j].role == "tool":
                j += 1
        out.append((i, j))
        i = j
    return out


def cut_point(transcript: Sequence[Message], start: int, end: int, keep_recent: int) -> int:
    """Where the verbatim tail begins when `transcript[start:end]` is compacted keeping the
    last `keep_recent` assistant turns: everything in `[start, cut)` is summarised."""
    if keep_recent <= 0:
        return end
    starts = [b for b, _ in groups(transcript, start, end) if transcript[b].role == "assistant"]
    if len(starts) < keep_recent:
        return start
    return starts[-keep_recent]


# ---------------------------------------------------------------- fitting to the budget


@dataclass(frozen=True)
class Fitted:
    messages: tuple[Message, ...]
    tokens: int
    dropped: int = 0
    tokens_before_drop: int = 0


def fit(head: Sequence[Message], body: Sequence[Message], budget: int, pin: int | None = None) -> Fitted:
    """`head + body`, dropping the oldest whole turns of `body` until it fits `budget`.

    `head` is never dropped; nor is `body[pin]` (the current step notice). When even the
    minimal context does not fit, it is returned anyway, with everything droppable dropped.
    """
    head_tokens = tokens(head)
    counts = [count_message(m) for m in body]
    total = head_tokens + sum(counts)
    if total <= budget:
        return Fitted(tuple(head) + tuple(body), total)
    before = total
    drop: set[int] = set()
    for b, e in groups(body):
        if total <= budget:
            break
        if pin is not None and b <= pin < e:
            continue
        drop.update(range(b, e))
        total -= sum(counts[b:e])
    kept = tuple(m for i, m in enumerate(body) if i not in drop)
    return Fitted(tuple(head) + kept, total, len(drop), before)


def fit_transcript(state: State, body: Sequence[Message]) -> Built:
    """The stable prefix then `body` (the trial's transcript as the strategy shows it), fitted to
    the budget by `fit` with the current step notice pinned (raw and masking)."""
    prefix = stable_prefix(state.task)
    pin = state.step_start if 0 <= state.step_start < len(body) else None
    f = fit(prefix, body, state.budget, pin=pin)
    return Built(
        messages=f.messages,
        stable=len(prefix),
        tokens=f.tokens,
        dropped=f.dropped,
        tokens_before_drop=f.tokens_before_drop,
    )


# ---------------------------------------------------------------- compaction bookkeeping


@dataclass(frozen=True)
class Live:
    """Which part of a segment `transcript[seg_start:]` is shown verbatim.

    `summary` is the active summary's text (None when no summary applies to the segment);
    `tail` is the index where the verbatim tail begins (`seg_start` without a summary).
    """

    summary: str | None
    tail: int


def live(state: State, seg_start: int, keep_recent: int) -> Live:
    s = state.summary
    if s is not None and not 0 <= s.upto <= len(state.transcript):
        raise ValueError(f"summary.upto={s.upto} is outside the transcript (length {len(state.transcript)})")
    if s is None or s.upto < seg_start:  # none, or one from an earlier segment (ledger: an earlier step)
        return Live(None, seg_start)
    return Live(s.text, cut_point(state.transcript, seg_start, s.upto, keep_recent))


def compactable_tokens(state: State, seg_start: int, keep_recent: int) -> int:
    """Tokens of the verbatim turns a compaction now would replace (0: nothing to compact)."""
    current = live(state, seg_start, keep_recent).tail
    cut = cut_point(state.transcript, seg_start, len(state.transcript), keep_recent)
    return tokens(state.transcript[current:cut]) if cut > current else 0


def should_compact(
    state: State,
    context_tokens: int,
    threshold: float,
    seg_start: int,
    keep_recent: int,
    forced: bool = False,
) -> bool:
    """The compaction trigger both summarising strategies share.

    Compact when there is something new to summarise and: the turn is forced; or the
    context no longer fits the budget; or it passed `threshold × budget` and the turns to
    summarise hold at least half the headroom `(1 - threshold) × budget`. The last clause
    keeps a context whose fixed part sits near the threshold from calling the summariser
    every turn to replace a single turn; it waits until a compaction frees real room.
    """
    gain = compactable_tokens(state, seg_start, keep_recent)
    if gain <= 0:
        return False
    if forced or context_tokens > state.budget:
        return True
    limit = threshold * state.budget
    return context_tokens > limit and gain >= (state.budget - limit) / 2


def summary_message(text: str, scope: str) -> Message:
    return Message(
        role="user",
        content=(
            f"SUMMARY OF EARLIER TURNS{scope} (the harness compacted them; this summary replaces them)\n\n"
            + text
        ),
    )


def render_transcript(messages: Sequence[Message]) -> list[str]:
    """Messages as plain text for the summariser, one piece per message. File blocks and
    `[inv:..]`/`[check:..]` lines in tool results are kept verbatim."""
    out = []
    for m in messages:
        if m.role == "tool":
            out.append(f"[tool result{' ' + m.name if m.name else ''}]\n{m.content}")
            continue
        text = f"[{m.role}]\n{m.content}" if m.content else f"[{m.role}]"
        for c in m.tool_calls:
            text += f"\n-> {c.name} {canonical_json(c.args)}"
        out.append(text)
    return out


def summary_request(
    state: State, head: Sequence[Message], seg_start: int, keep_recent: int, prompt: str, scope: str
) -> tuple[Message, ...]:
    """`head` + one user message with (the previous summary and) the turns to summarise,
    rendered as text, + a final user message with the compaction prompt.

    The turns summarised are `transcript[tail:cut)`, exactly the ones `live` will replace
    once the harness stores the summary with `upto=len(transcript)`. If they do not fit the
    budget, the oldest are left out of the summariser's view.
    """
    cur = live(state, seg_start, keep_recent)
    cut = cut_point(state.transcript, seg_start, len(state.transcript), keep_recent)
    pieces = render_transcript(state.transcript[cur.tail : cut])
    intro = f"TRANSCRIPT TO SUMMARISE{scope}"
    if cur.summary is not None:
        intro = f"PREVIOUS SUMMARY\n\n{cur.summary}\n\n{intro} (the turns after the previous summary)"
    fixed = tokens(head) + count_text(intro) + count_text(prompt) + 8
    room = state.budget - fixed
    counts = [count_text(p) + 1 for p in pieces]
    first = 0
    total = sum(counts)
    while total > room and first < len(pieces):
        total -= counts[first]
        first += 1
    if first:
        intro += f"\n({first} older messages left out to fit the window)"
    body = "\n\n".join([intro, *pieces[first:]])
    return tuple(head) + (Message(role="user", content=body), Message(role="user", content=prompt))


def step_notice(state: State) -> Message:
    """The harness's current-step notice from the transcript (rendered if missing)."""
    if 0 <= state.step_start < len(state.transcript):
        m = state.transcript[state.step_start]
        if m.role == "user" and render.parse_current_step(m.content) == state.step.id:
            return m
    return Message(role="user", content=render.current_step_block(state.step))


def one_line(text: str, cap: int) -> str:
    """Whitespace collapsed to single spaces, cut to `cap` characters (with an ellipsis)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= cap else flat[: max(cap - 1, 0)].rstrip() + "…"
