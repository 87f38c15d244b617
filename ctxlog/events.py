"""One small frozen class per event kind: the schema of `events.jsonl` (docs/design.md §6).

A record is `{seq, turn, kind, prev, <the class's fields>, t}`: `seq` and `prev` (the hash
chain) are the writer's (bench/eventlog/writer.py), `t` holds volatile timings, and `blobs`
(only in a record with a value too large to hold) says where its values stored once by content
are (ctxlog/blobs.py; the reader puts them back). Readers get the
classes back through `parse` (ctxlog/reader.py). `SCHEMA` is written in `trial_start.schema`;
version 1, the log before these classes, has no `schema` and the same fields, and reads as is.
Fields a class does not know land in `extra`, an unknown kind is `Unknown`, and every field has
a default (an older or torn record still parses): nothing in a log is lost by reading it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

SCHEMA = 2
ENVELOPE = ("seq", "turn", "kind", "prev", "t", "blobs")  # blobs: the writer's references (ctxlog/blobs.py)
Fields = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Event:
    kind: ClassVar[str] = ""
    OPTIONAL: ClassVar[tuple[str, ...]] = ()  # fields left out of the record while None
    turn: int | None = 0
    seq: int = -1  # set by the writer; -1 before the event is written
    t: Fields = field(default_factory=dict, compare=False)  # volatile: timings, never compared
    prev: str = field(default="", compare=False)  # as read: sha256 of the line before (the writer sets it)
    extra: Fields = field(default_factory=dict)  # fields this schema does not know, kept as read

    def fields(self) -> Fields:
        """The event's own fields, as the record holds them (without the envelope)."""
        out = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("turn", "seq", "t", "prev", "extra")
        }
        out = {k: v for k, v in out.items() if not (v is None and k in self.OPTIONAL)}
        return {**self.extra, **out}

    def record(self) -> Fields:
        """The record without `prev` (the chain is the writer's): what a reader of dicts sees."""
        return {"seq": self.seq, "turn": self.turn, "kind": self.kind, **self.fields(), "t": self.t}


@dataclass(frozen=True, kw_only=True)
class TrialStart(Event):
    kind: ClassVar[str] = "trial_start"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("schema",)
    trial_id: str = ""
    task_id: str = ""
    strategy: str = ""
    arm: str = ""
    model: str | None = None
    rep: int = 0
    seed: int | None = None
    window: int = 0
    max_output: int = 0
    base_commit: str = ""
    config_hash: str = ""
    schema: int | None = None  # absent in version 1


@dataclass(frozen=True, kw_only=True)
class Message(Event):
    kind: ClassVar[str] = "message"
    sha: str = ""
    message: Fields = field(default_factory=dict)  # role, content, tool_calls, tool_call_id, name


@dataclass(frozen=True, kw_only=True)
class Context(Event):
    kind: ClassVar[str] = "context"
    purpose: str = "turn"  # turn | compaction
    messages: list[str] = field(default_factory=list)  # message shas, in order
    sha: str = ""
    tokens: int = 0
    stable: int = 0


@dataclass(frozen=True, kw_only=True)
class ModelCall(Event):
    kind: ClassVar[str] = "model_call"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("decisions", "slips")
    purpose: str = "turn"
    model_id: str = ""
    request_hash: str = ""
    tokens_harness: int = 0
    usage_estimated: bool = False
    provider_request_hash: str | None = None
    stop_reason: str = ""
    usage: Fields = field(default_factory=dict)  # input, output, cache_read, cache_write
    cost_usd: float = 0.0
    content: str = ""
    tool_calls: list[Fields] = field(default_factory=list)
    decisions: list[Fields] | None = None  # the simulated model's temptation decisions
    slips: list[Fields] | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCall(Event):
    kind: ClassVar[str] = "tool_call"
    call_id: str = ""
    name: str = ""
    args: Fields = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ToolResult(Event):
    kind: ClassVar[str] = "tool_result"
    call_id: str = ""
    name: str = ""
    ok: bool = False
    output: str = ""  # its last TOOL_OUTPUT_TAIL_CHARS characters


@dataclass(frozen=True, kw_only=True)
class Check(Event):
    kind: ClassVar[str] = "check"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("tree", "hidden")
    step: str = ""  # a step id, or "final"
    command: str = ""
    exit_code: int | None = None
    passed: bool | None = None  # absent in early logs: read exit_code == 0
    timed_out: bool = False
    output: str = ""
    parts: list[Fields] = field(default_factory=list)
    invariants: list[str] = field(default_factory=list)
    tree: str | None = None  # the git tree sha of the judge's copy it ran on (absent before issue 42)
    # the final acceptance's hidden checks, apart from `passed` (visible): {"passed", "parts"}
    hidden: Fields | None = None


@dataclass(frozen=True, kw_only=True)
class StepStart(Event):
    kind: ClassVar[str] = "step_start"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("invariants",)
    step: str = ""
    index: int = 0
    repo_commit: str = ""
    tree: str = ""
    files: list[list[str]] = field(default_factory=list)  # [path, content] read fresh
    drift_note: str | None = None
    dirty_files: list[str] = field(default_factory=list)
    new_session: bool = False
    invariants: list[list[Any]] | None = None  # [id, anchors] of the invariants in force


@dataclass(frozen=True, kw_only=True)
class HeadRefresh(Event):
    kind: ClassVar[str] = "head_refresh"
    files: list[list[str]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class StepStatus(Event):
    kind: ClassVar[str] = "step_status"
    step: str = ""
    status: str = ""  # passed | failed


@dataclass(frozen=True, kw_only=True)
class Compaction(Event):
    kind: ClassVar[str] = "compaction"
    tokens_before: int = 0
    tokens_after: int = 0
    summary_sha: str = ""
    summary: str = ""
    upto: int = 0
    usage: Fields = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ContextTruncation(Event):
    kind: ClassVar[str] = "context_truncation"
    dropped_messages: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass(frozen=True, kw_only=True)
class ContextOverflow(Event):
    kind: ClassVar[str] = "context_overflow"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("window", "provider_counts", "detail")
    tokens: int = 0
    budget: int = 0
    window: int | None = None  # ours: the built context exceeds the budget
    provider_counts: int | None = None
    detail: str | None = None  # the provider's: its own window refused the request


@dataclass(frozen=True, kw_only=True)
class OutputTruncation(Event):
    kind: ClassVar[str] = "output_truncation"
    purpose: str = "turn"
    max_tokens: int = 0


@dataclass(frozen=True, kw_only=True)
class Drift(Event):
    kind: ClassVar[str] = "drift"
    drift_id: str = ""
    drift_kind: str = ""
    commit: str = ""
    message: str = ""
    author: str = ""
    files: list[str] = field(default_factory=list)
    shas: dict[str, str | None] = field(default_factory=dict)  # path -> content sha (None: deleted)


@dataclass(frozen=True, kw_only=True)
class Commit(Event):
    """A certified step committed: its tree is the one the judge certified (certified_tree.py)."""

    kind: ClassVar[str] = "commit"
    step: str = ""
    commit: str = ""
    tree: str = ""
    certified: str = ""


@dataclass(frozen=True, kw_only=True)
class PolicyViolation(Event):
    kind: ClassVar[str] = "policy_violation"
    tool: str = ""
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Invariant(Event):
    kind: ClassVar[str] = "invariant"
    invariant: str = ""
    status: str = ""  # violated
    exit_code: int | None = None
    text: str = ""


@dataclass(frozen=True, kw_only=True)
class Error(Event):
    kind: ClassVar[str] = "error"
    reason: str = ""
    detail: str = ""
    kept: bool = True  # False: a later failure, after the trial's own reason


@dataclass(frozen=True, kw_only=True)
class TrialEnd(Event):
    kind: ClassVar[str] = "trial_end"
    success: bool = False
    status: str = ""
    outcome_class: str = ""
    failure_reason: str = ""
    steps_passed: int = 0
    final_tree_sha: str = ""


@dataclass(frozen=True, kw_only=True)
class ToolError(Event):
    kind: ClassVar[str] = "tool_error"
    tool: str = ""
    error: str = ""
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class ProcessKilled(Event):
    kind: ClassVar[str] = "process_killed"
    when: str = ""
    processes: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class CheckCached(Event):
    kind: ClassVar[str] = "check_cached"
    step: str = ""
    key: str | None = None
    origin: Fields | str = ""


@dataclass(frozen=True, kw_only=True)
class TidyUp(Event):
    kind: ClassVar[str] = "tidy_up"
    step: str = ""
    attempt: int = 0
    key: str = ""
    anchors: list[str] = field(default_factory=list)
    taken: bool = False
    what: str = ""


@dataclass(frozen=True, kw_only=True)
class AgentRequest(Event):
    """A request an external agent sent to the model proxy (bench/proxy/), its body byte for byte.

    `thread` is what the proxy made of it: `main` (the agent's own turns), `side` (a title, a
    commit message), `subagent`, `compaction` (the agent's own summary request), `count_tokens`.
    A request the proxy forwarded is followed by its `context` and `model_call` records; a refused
    one by a `context_overflow`; then always an `agent_reply`. `verify` decodes `body` again and
    checks it gives the same context and request hash."""

    kind: ClassVar[str] = "agent_request"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("signal", "rewrite")
    api: str = ""  # anthropic | openai_chat | openai_responses | anthropic_count
    path: str = ""
    thread: str = "main"
    body: str = ""  # the request body as sent (UTF-8 text; JSON)
    body_sha: str = ""
    tokens: int = 0  # the whole request by the proxy's count
    max_tokens: int = 0  # the reply limit forwarded to the model (the agent's, capped at the model's)
    window: int = 0  # the window it was held to (0: none)
    overhead: int = (
        0  # the agent's fixed overhead (system + tools of its first request), in the proxy's tokens
    )
    signal: str | None = None  # the agent's own word on the thread (Codex's request_kind), when it gave one
    # the proxy's rewrite applied to it (bench/proxy/rewrite.py), by its label: the model saw the
    # rewritten request (the `context` that follows), `body` stays the agent's
    rewrite: str | None = None


@dataclass(frozen=True, kw_only=True)
class AgentReply(Event):
    """What the model proxy sent back for the `agent_request` before it, byte for byte."""

    kind: ClassVar[str] = "agent_reply"
    api: str = ""
    status: int = 200
    stream: bool = False
    body: str = ""  # the JSON body, or the whole SSE text
    body_sha: str = ""
    # the provider's usage (input, output, cache_read, cache_write)
    usage: Fields = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class AgentTurn(Event):
    """An external agent's turn ended (bench/agents/): one instruction given, how the agent ended."""

    kind: ClassVar[str] = "agent_turn"
    agent: str = ""
    step: str = ""
    attempt: int = 0
    instruction: str = ""
    exit_code: int | None = None
    requests: int = 0  # model requests the proxy saw during the turn
    agent_count: int | None = None  # the agent's own count of its model calls, where it reports one
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Unknown(Event):
    """A kind this schema does not know: its fields, its `kind` too, are all in `extra`."""


CLASSES: dict[str, type[Event]] = {
    c.kind: c
    for c in (
        TrialStart,
        Message,
        Context,
        ModelCall,
        ToolCall,
        ToolResult,
        Check,
        StepStart,
        HeadRefresh,
        StepStatus,
        Compaction,
        ContextTruncation,
        ContextOverflow,
        OutputTruncation,
        Drift,
        PolicyViolation,
        Invariant,
        Error,
        TrialEnd,
        ToolError,
        ProcessKilled,
        CheckCached,
        TidyUp,
        AgentRequest,
        AgentReply,
        AgentTurn,
        Commit,
    )
}
KINDS = frozenset(CLASSES)


def parse(record: Fields) -> Event:
    """The event of a record (a dict parsed from one line). Never raises on content: unknown
    fields go to `extra`, an unknown kind to `Unknown`, a turn that is not an int to None."""
    kind = str(record.get("kind"))
    cls = CLASSES.get(kind, Unknown)
    known = {f.name for f in fields(cls)} - {"turn", "seq", "t", "prev", "extra"}
    turn, seq, t = record.get("turn"), record.get("seq"), record.get("t")
    mine = {k: v for k, v in record.items() if k in known}
    extra = {k: v for k, v in record.items() if k not in known and k not in ENVELOPE}
    env: Fields = {
        "turn": turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
        "seq": seq if isinstance(seq, int) else -1,
        "t": t if isinstance(t, dict) else {},
        "extra": extra,
        "prev": str(record.get("prev") or ""),
    }
    if cls is Unknown:
        env["extra"] = {"kind": kind, **extra}
    return cls(**mine, **env)
