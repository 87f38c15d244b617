"""MLflow tracing for trials: one trace per trial, one span per model call and per tool call, so
a run's trace in the MLflow UI reads as the conversation, turn by turn. Works offline against
a sqlite tracking store. A no-op unless `configure(True)` was called (`tracking.tracing`).

    from bench.tracking import tracing
    tracing.configure(cfg.tracking.tracing)                       # once, at the entry point
    with tracing.trial_trace(run_name, {"strategy": s, "arm": a}, run_id=run_id) as root:
        with tracing.model_span(turn, rhash, model_id=p.model_id, messages=ctx) as span:
            c = provider.complete(ctx, tools, ...)
            span.set_completion(c)              # outputs + token usage
        with tracing.tool_span(turn, call.name, call.args, call_id=call.id) as span:
            span.set_outputs({"result": text})
        root.set_outputs({"success": ok})

Everything that enters a span passes through `bench.core.redact.scrub` (secret-named keys,
secret values from the environment and the providers' registered keys).
A tracing failure is logged and never fails a trial.

A trial is traced by a subscriber of its event log (`TrialSpans`, bench/trial/record.py's
`Recorder`): a `context` event opens a model span and its `model_call` closes it, a
`tool_call` opens a tool span and its `tool_result` closes it; the loop itself calls nothing here.
Its spans hang from the trial's root span by reference, not by the thread's active span: an
external agent's model calls are written by the model proxy's own thread (bench/proxy/log_request.py).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any

from bench.core.redact import scrub
from bench.core.types import Completion, Message, ToolCall, Usage, context_sha
from ctxlog import events as ev

log = logging.getLogger(__name__)

# A tool's result in its span: the end of it (the whole text is in the event log's messages).
SPAN_TEXT_CHARS = 2000
_state: dict[str, Any] = {"enabled": False}


def configure(enabled: bool, *, tracking_uri: str | None = None, experiment: str | None = None) -> None:
    """Turn tracing on or off for this process (call with `cfg.tracking.tracing`)."""
    _state["enabled"] = bool(enabled)
    if enabled and (tracking_uri or experiment):
        import mlflow

        if tracking_uri:
            mlflow.set_tracking_uri(tracking_uri)
        if experiment:
            mlflow.set_experiment(experiment)


class Span:
    """What the context managers yield: set_inputs / set_outputs / set_attributes (all scrubbed)."""

    def __init__(self, span: Any = None) -> None:
        self._span = span

    @property
    def trace_id(self) -> str | None:
        return getattr(self._span, "trace_id", None)

    def _call(self, method: str, value: Any) -> None:
        if self._span is None:
            return
        try:
            getattr(self._span, method)(scrub(value))
        except Exception:  # tracing never fails a trial
            log.warning("tracing: %s failed", method, exc_info=True)

    def set_inputs(self, inputs: Any) -> None:
        self._call("set_inputs", inputs)

    def set_outputs(self, outputs: Any) -> None:
        self._call("set_outputs", outputs)

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self._call("set_attributes", dict(attributes))

    def set_completion(self, c: Completion) -> None:
        """Outputs and token-usage attributes of a model span, from the provider's Completion."""
        self.set_outputs(completion_outputs(c))
        self.set_attributes(usage_attributes(c))


NOOP = Span(None)


@contextmanager
def _span(
    name: str, span_type: str, attributes: Mapping[str, Any], inputs: Any = None, run_id: str | None = None
) -> Iterator[Span]:
    if not _state["enabled"]:
        yield NOOP
        return
    try:
        import mlflow

        kwargs: dict[str, Any] = {"name": name, "span_type": span_type, "attributes": scrub(dict(attributes))}
        if run_id:
            kwargs["run_id"] = run_id
        cm = mlflow.start_span(**kwargs)
        raw = cm.__enter__()
    except Exception:
        log.warning("tracing: could not start span %s", name, exc_info=True)
        yield NOOP
        return
    span = Span(raw)
    if inputs is not None:
        span.set_inputs(inputs)
    try:
        yield span
    except BaseException as exc:
        if not cm.__exit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        try:
            cm.__exit__(None, None, None)
        except Exception:
            log.warning("tracing: could not end span %s", name, exc_info=True)


def trial_trace(name: str, attrs: Mapping[str, Any] | None = None, *, run_id: str | None = None) -> Any:
    """The root span of one trial (its trace is linked to the MLflow run `run_id`). The trial's
    identity is also its inputs: the UI's trace list shows them as the request."""
    attrs = dict(attrs or {})
    return _span(name, "AGENT", {f"ctxbench.{k}": v for k, v in attrs.items()}, attrs or None, run_id=run_id)


def _turn_messages(messages: Sequence[Message]) -> list[Message]:
    """The messages after the last assistant turn: what is new in this call's context."""
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return list(messages[last + 1 :])


def model_span(
    turn: int,
    request_hash: str | None = None,
    *,
    model_id: str | None = None,
    messages: Sequence[Message] | None = None,
    full_context: bool = False,
    attrs: Mapping[str, Any] | None = None,
) -> Any:
    """A CHAT_MODEL span for one model call. Inputs: the messages new since the last reply
    (all of them with `full_context=True`), so the trace reads as the conversation."""
    a: dict[str, Any] = {
        "ctxbench.turn": turn,
        "ctxbench.request_hash": request_hash or "",
        **({"mlflow.llm.model": model_id} if model_id else {}),
        **(attrs or {}),
    }
    inputs = None
    if messages is not None and _state["enabled"]:  # hashing the context costs a turn ~1 ms: only when traced
        shown = list(messages) if full_context else _turn_messages(messages)
        a.update({"ctxbench.n_messages": len(messages), "ctxbench.context_sha": context_sha(tuple(messages))})
        inputs = {"messages": [m.to_dict() for m in shown]}
    return _span(f"model turn {turn}", "CHAT_MODEL", a, inputs)


def tool_span(turn: int, name: str, args: Mapping[str, Any], *, call_id: str | None = None) -> Any:
    """A TOOL span for one tool call; set its result with `span.set_outputs({...})`."""
    a = {"ctxbench.turn": turn, "ctxbench.tool": name, "ctxbench.tool_call_id": call_id or ""}
    return _span(f"tool {name}", "TOOL", a, dict(args))


class TrialSpans:
    """The spans of one trial, opened and closed by the events its log is written (a subscriber
    of bench/trial/record.py's Recorder). A span whose closing event never comes (the call raised,
    the trial ended) is closed as failed by the next event that is not its own, or by `close`."""

    def __init__(self) -> None:
        self._messages: dict[str, dict[str, Any]] = {}  # sha -> message, from the `message` events
        self._model: Span | None = None
        self._tool: Span | None = None
        # Made inside the trial's trace (bench/trial/runner.py): its root is every span's parent,
        # whichever thread writes the event (the proxy's server thread has no active span).
        self._root = _active_span()

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.Message):
            self._messages[event.sha] = event.message
            return
        if isinstance(event, ev.ModelCall) and self._model is not None:
            self._model.set_attributes(
                {"ctxbench.request_hash": event.request_hash, "mlflow.llm.model": event.model_id}
            )
            self._model.set_completion(_completion(event))
            self._end("_model")
            return
        if isinstance(event, ev.ToolResult) and self._tool is not None:
            self._tool.set_outputs({"ok": event.ok, "result": event.output[-SPAN_TEXT_CHARS:]})
            self._end("_tool")
            return
        self._end("_model", failed=type(event).__name__)  # a model call answers before anything else happens
        if isinstance(event, ev.Context):
            messages = [self._messages.get(sha, {}) for sha in event.messages]
            last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
            self._model = self._open(
                f"model turn {event.turn or 0}",
                "CHAT_MODEL",
                {
                    "ctxbench.turn": event.turn or 0,
                    "ctxbench.purpose": event.purpose,
                    "ctxbench.n_messages": len(messages),
                    "ctxbench.context_sha": event.sha,
                },
                {"messages": messages[last + 1 :]},
            )
        elif isinstance(event, ev.ToolCall):
            self._end("_tool", failed="ToolCall")
            self._tool = self._open(
                f"tool {event.name}",
                "TOOL",
                {
                    "ctxbench.turn": event.turn or 0,
                    "ctxbench.tool": event.name,
                    "ctxbench.tool_call_id": event.call_id or "",
                },
                dict(event.args),
            )
        elif isinstance(event, (ev.Error, ev.TrialEnd)):
            self._end("_tool", failed=type(event).__name__)

    def close(self) -> None:
        """End what is still open (the trial ended inside a call)."""
        self._end("_model", failed="the trial ended")
        self._end("_tool", failed="the trial ended")

    def _open(self, name: str, span_type: str, attributes: dict[str, Any], inputs: Any) -> Span | None:
        """A child of the trial's root span (a trace of its own when there is no root)."""
        if not _state["enabled"]:
            return None
        try:
            import mlflow

            live = mlflow.start_span_no_context(
                name, span_type=span_type, parent_span=self._root, attributes=scrub(attributes)
            )
        except Exception:
            log.warning("tracing: could not start span %s", name, exc_info=True)
            return None
        span = Span(live)
        span.set_inputs(inputs)
        return span

    def _end(self, which: str, failed: str | None = None) -> None:
        span = getattr(self, which)
        if span is None:
            return
        setattr(self, which, None)
        try:
            if failed is not None:
                span._span.record_exception(RuntimeError(f"the call did not return ({failed})"))
            span._span.end()
        except Exception:
            log.warning("tracing: could not end a span", exc_info=True)


def _active_span() -> Any:
    """The span active in this thread (the trial's root, where TrialSpans is made), or None."""
    if not _state["enabled"]:
        return None
    try:
        import mlflow

        return mlflow.get_current_active_span()
    except Exception:
        log.warning("tracing: could not read the active span", exc_info=True)
        return None


def _completion(e: ev.ModelCall) -> Completion:
    return Completion(
        content=e.content,
        tool_calls=tuple(ToolCall(**c) for c in e.tool_calls),
        stop_reason=e.stop_reason,
        usage=Usage(**e.usage),
        latency_s=float(e.t.get("latency_s", 0.0)),
        ttft_s=float(e.t.get("ttft_s", 0.0)),
        model_id=e.model_id,
        request_hash=e.provider_request_hash or "",
        cost_usd=e.cost_usd,
    )


def completion_outputs(c: Completion) -> dict[str, Any]:
    """A Completion as span outputs (the reply, tool calls, usage, stop reason, timings, cost)."""
    return {
        "role": "assistant",
        "content": c.content,
        "tool_calls": [asdict(t) for t in c.tool_calls],
        "stop_reason": c.stop_reason,
        "usage": asdict(c.usage),
        "latency_s": c.latency_s,
        "ttft_s": c.ttft_s,
        "cost_usd": c.cost_usd,
        "model_id": c.model_id,
        "request_hash": c.request_hash,
    }


def usage_attributes(c: Completion) -> dict[str, Any]:
    """MLflow's token-usage attribute (shown in the trace UI) plus ours."""
    u = c.usage
    return {
        "mlflow.chat.tokenUsage": {
            "input_tokens": u.prompt,
            "output_tokens": u.output,
            "total_tokens": u.prompt + u.output,
            "cache_read_input_tokens": u.cache_read,
            "cache_creation_input_tokens": u.cache_write,
        },
        "ctxbench.stop_reason": c.stop_reason,
        "ctxbench.cost_usd": c.cost_usd,
    }


def flush() -> None:
    """Wait for traces logged asynchronously (call before reading them back or exiting)."""
    if not _state["enabled"]:
        return
    try:
        import mlflow

        fn = getattr(mlflow, "flush_trace_async_logging", None)
        if fn is not None:
            fn()
    except Exception:
        log.warning("tracing: flush failed", exc_info=True)
