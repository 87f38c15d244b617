"""bench.tracking.tracing: a trial's trace in a sqlite MLflow store (offline) reads as the conversation, one
span per model call and per tool call; no-op when disabled; secrets never enter a span."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.core import redact
from bench.core.types import Completion, ToolCall, Usage
from bench.tracking import tracing
from ctxlog import events as ev
from tests.helpers.serve_support import CONVERSATION

CANARY = "sk-CANARY-tracing-7f3a9c2e1b"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    import mlflow

    db = tmp_path_factory.mktemp("mlflow") / "mlflow.db"
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    # Created with an artifact location under the temp dir: MLflow's default is ./mlruns in the cwd.
    mlflow.MlflowClient().create_experiment(
        "tracing-test", artifact_location=(db.parent / "artifacts").as_uri()
    )
    exp = mlflow.set_experiment("tracing-test")
    yield db, exp.experiment_id
    tracing.configure(False)
    mlflow.set_tracking_uri(previous)


def _traces(exp_id):
    import mlflow

    tracing.flush()
    return mlflow.search_traces(locations=[exp_id], return_type="list")


def _completion(turn):
    return Completion(
        content=f"reply {turn}",
        tool_calls=(ToolCall(f"c{turn}", "read_file", {"path": "a.py"}),),
        stop_reason="tool_use",
        usage=Usage(100, 20, 1024, 0),
        latency_s=0.5,
        ttft_s=0.1,
        model_id="m",
        request_hash=f"h{turn}",
        cost_usd=0.001,
    )


def test_disabled_is_a_no_op(store):
    _, exp_id = store
    tracing.configure(False)
    before = len(_traces(exp_id))
    with (
        tracing.trial_trace("t", {"a": 1}) as root,
        tracing.model_span(1, "h", messages=CONVERSATION) as span,
    ):
        span.set_completion(_completion(1))
        root.set_outputs({"x": 1})
    assert root is tracing.NOOP and span is tracing.NOOP
    assert len(_traces(exp_id)) == before


def test_a_trial_trace_has_a_span_per_model_call_and_tool_call(store):
    _, exp_id = store
    tracing.configure(True)
    with tracing.trial_trace("raw·baseline·toy#1·rep0", {"strategy": "raw", "arm": "baseline"}) as root:
        for turn in (1, 2):
            ctx = CONVERSATION[: 2 + 3 * turn]
            with tracing.model_span(turn, f"h{turn}", model_id="m", messages=ctx) as span:
                span.set_completion(_completion(turn))
            with tracing.tool_span(turn, "read_file", {"path": "a.py"}, call_id=f"c{turn}") as span:
                span.set_outputs({"result": "x = 1"})
        root.set_outputs({"success": True})
    trace = next(t for t in _traces(exp_id) if t.data.spans[0].name.startswith("raw·baseline"))
    spans = trace.data.spans
    assert [s.name for s in spans] == [
        "raw·baseline·toy#1·rep0",
        "model turn 1",
        "tool read_file",
        "model turn 2",
        "tool read_file",
    ]
    root_span = spans[0]
    assert all(s.parent_id == root_span.span_id for s in spans[1:])
    assert [s.span_type for s in spans] == ["AGENT", "CHAT_MODEL", "TOOL", "CHAT_MODEL", "TOOL"]
    assert root_span.attributes["ctxbench.strategy"] == "raw" and root_span.outputs == {"success": True}
    assert root_span.inputs == {"strategy": "raw", "arm": "baseline"}  # the trace list's Request column
    assert spans[1].inputs["messages"] == [m.to_dict() for m in CONVERSATION[3:5]]  # two tool results
    model = spans[3]
    # inputs: what is new since the last reply, so the trace reads turn by turn
    assert model.inputs["messages"] == [m.to_dict() for m in CONVERSATION[7:8]]
    assert model.outputs["content"] == "reply 2" and model.outputs["tool_calls"][0]["name"] == "read_file"
    assert model.attributes["ctxbench.turn"] == 2 and model.attributes["ctxbench.n_messages"] == 8
    assert model.attributes["mlflow.chat.tokenUsage"]["cache_read_input_tokens"] == 1024
    assert spans[4].inputs == {"path": "a.py"} and spans[4].outputs == {"result": "x = 1"}


def test_secrets_never_enter_a_span(store, monkeypatch):
    db, exp_id = store
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", CANARY)
    tracing.configure(True)
    with tracing.trial_trace("secret-trial", {"api_key": "literal-key-value-1", "note": f"key={CANARY}"}):
        with tracing.tool_span(
            1, "run", {"command": f"echo {CANARY}", "headers": {"Authorization": "Bearer zzz"}}
        ) as s:
            s.set_outputs({"stdout": CANARY})
    spans = next(t for t in _traces(exp_id) if t.data.spans[0].name == "secret-trial").data.spans
    assert spans[0].attributes["ctxbench.api_key"] == redact.REDACTED
    assert spans[1].inputs == {
        "command": f"echo {redact.REDACTED}",
        "headers": {"Authorization": redact.REDACTED},
    }
    data = Path(db).read_bytes()
    assert CANARY.encode() not in data and b"literal-key-value-1" not in data


def test_an_exception_propagates_and_marks_the_trace(store):
    _, exp_id = store
    tracing.configure(True)
    with pytest.raises(RuntimeError, match="sandbox lost"):
        with tracing.trial_trace("failing-trial"):
            with tracing.tool_span(3, "run", {"command": "pytest"}):
                raise RuntimeError("sandbox lost")
    trace = next(t for t in _traces(exp_id) if t.data.spans[0].name == "failing-trial")
    assert str(trace.info.state).endswith("ERROR")
    assert all(str(s.status.status_code).endswith("ERROR") for s in trace.data.spans)


def test_scrub_and_registered_secrets():
    redact.register("registered-secret-99")
    out = redact.scrub(
        {"x-api-key": "v", "api_key_env": "OPENAI_API_KEY", "nested": ["registered-secret-99!"]}
    )
    assert out == {
        "x-api-key": redact.REDACTED,
        "api_key_env": "OPENAI_API_KEY",
        "nested": [f"{redact.REDACTED}!"],
    }


def _model_call(turn):
    c = _completion(turn)
    return ev.ModelCall(
        turn=turn,
        model_id=c.model_id,
        request_hash=f"rh{turn}",
        provider_request_hash=c.request_hash,
        stop_reason=c.stop_reason,
        usage=c.usage.__dict__,
        cost_usd=c.cost_usd,
        content=c.content,
        tool_calls=[t.__dict__ for t in c.tool_calls],
        t={"latency_s": c.latency_s, "ttft_s": c.ttft_s},
    )


def test_a_trial_is_traced_by_a_subscriber_of_its_event_log(store, tmp_path):
    """The loop calls nothing in tracing: the spans follow the events the Recorder writes."""
    from bench.trial.record import Recorder

    _, exp_id = store
    tracing.configure(True)
    rec = Recorder(tmp_path / "events.jsonl")
    spans = tracing.TrialSpans()
    rec.subscribers.append(spans)
    with tracing.trial_trace("events-trial", {"strategy": "raw"}):
        for turn in (1, 2):
            rec.context(turn, CONVERSATION[: 2 + 3 * turn], tokens=10, stable=2)
            rec.append(_model_call(turn))
            rec.append(ev.ToolCall(turn=turn, call_id=f"c{turn}", name="read_file", args={"path": "a.py"}))
            rec.append(
                ev.ToolResult(turn=turn, call_id=f"c{turn}", name="read_file", ok=True, output="x = 1")
            )
        rec.context(3, CONVERSATION, tokens=10, stable=2)  # a call that never returns: the trial ends
        rec.append(ev.Error(turn=3, reason="provider_error", detail="gone"))
        spans.close()
    rec.close()
    trace = next(t for t in _traces(exp_id) if t.data.spans[0].name == "events-trial")
    got = trace.data.spans
    assert [s.name for s in got] == [
        "events-trial",
        "model turn 1",
        "tool read_file",
        "model turn 2",
        "tool read_file",
        "model turn 3",
    ]
    assert all(s.parent_id == got[0].span_id for s in got[1:])
    model = got[3]
    assert model.inputs["messages"] == [m.to_dict() for m in CONVERSATION[7:8]]
    assert model.outputs["content"] == "reply 2" and model.outputs["request_hash"] == "h2"
    assert model.attributes["ctxbench.request_hash"] == "rh2" and model.attributes["ctxbench.n_messages"] == 8
    assert model.attributes["mlflow.chat.tokenUsage"]["cache_read_input_tokens"] == 1024
    assert got[4].inputs == {"path": "a.py"} and got[4].outputs == {"ok": True, "result": "x = 1"}
    assert str(got[5].status.status_code).endswith("ERROR")  # closed as failed by the error event


def test_the_proxys_calls_from_its_own_thread_are_spans_of_the_trials_trace(store, tmp_path):
    """An external agent's model calls are written by the model proxy's server thread
    (bench/proxy/log_request.py), where the trial's root span is not the active one: each must still
    be a span of the trial's trace, with its token usage, and no trace of its own."""
    import threading

    from bench.trial.record import Recorder

    _, exp_id = store
    tracing.configure(True)
    before = len(_traces(exp_id))
    rec = Recorder(tmp_path / "events.jsonl")
    with tracing.trial_trace("agent-trial", {"strategy": "mini_swe_agent"}):
        spans = tracing.TrialSpans()  # as the runner makes it: inside the trial's trace
        rec.subscribers.append(spans)

        def proxy_thread() -> None:
            for turn in (1, 2):
                rec.append(
                    ev.AgentRequest(
                        turn=turn,
                        api="openai_chat",
                        path="/v1/chat/completions",
                        thread="main",
                        body="{}",
                        body_sha="0" * 64,
                    )
                )
                rec.context(turn, CONVERSATION[: 2 + 3 * turn], tokens=10, stable=0)
                rec.append(_model_call(turn))

        t = threading.Thread(target=proxy_thread)
        t.start()
        t.join()
        rec.append(ev.ToolCall(turn=2, call_id="c2", name="run", args={"cmd": "ls"}))  # the harness's thread
        rec.append(ev.ToolResult(turn=2, call_id="c2", name="run", ok=True, output="a.py"))
        spans.close()
    rec.close()
    traces = _traces(exp_id)
    assert len(traces) == before + 1  # one trace for the trial, none per proxy call
    got = next(t for t in traces if t.data.spans[0].name == "agent-trial").data.spans
    assert [s.name for s in got] == ["agent-trial", "model turn 1", "model turn 2", "tool run"]
    assert all(s.parent_id == got[0].span_id for s in got[1:])
    assert all(str(s.status.status_code).endswith("OK") for s in got[1:3])
    assert got[2].attributes["mlflow.chat.tokenUsage"] == {
        "input_tokens": 1124,
        "output_tokens": 20,
        "total_tokens": 1144,
        "cache_read_input_tokens": 1024,
        "cache_creation_input_tokens": 0,
    }
