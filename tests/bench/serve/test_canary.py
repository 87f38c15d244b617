"""A canary key never appears in what the providers log or return: log records (every logger at
DEBUG, the SDKs' included), Completions, ProviderError messages, cassettes, trace spans (the
sqlite bytes), the server's output. The run includes retries and a failing call, the paths
where a key is most likely to slip into a message."""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from pathlib import Path

import pytest

from bench.core.toolspecs import TOOLS
from bench.providers.base import ProviderError
from bench.providers.replay import RecordingProvider
from bench.serve.server import LoopbackServer
from bench.tracking import tracing
from tests.helpers.serve_support import KEY_ENV, KINDS, Sleeps, make, toy_backend
from tests.helpers.sim_world import make_task, run


@pytest.mark.parametrize("kind", KINDS)
def test_the_key_never_appears_in_logs_results_errors_cassettes_or_traces(
    kind, tmp_path, monkeypatch, caplog, capfd
):
    import mlflow

    canary = f"sk-CANARY-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_ENV[kind], canary)
    monkeypatch.setenv("LOOPBACK_KEY", canary)
    db, previous = tmp_path / "mlflow.db", mlflow.get_tracking_uri()
    # Artifacts under the temp dir (MLflow's default is ./mlruns in the cwd), so the grep below sees them.
    mlflow.MlflowClient(f"sqlite:///{db}").create_experiment(
        f"canary-{kind}", artifact_location=(tmp_path / "artifacts").as_uri()
    )
    tracing.configure(True, tracking_uri=f"sqlite:///{db}", experiment=f"canary-{kind}")
    caplog.set_level(logging.DEBUG)
    task, cassette, seen = make_task(), tmp_path / "cassette.jsonl", []
    try:
        with LoopbackServer(
            toy_backend(),
            faults=["429:1", "500:1", "malformed:1"],
            retry_after_s=0.01,
            key_env="LOOPBACK_KEY",
        ) as srv:
            provider = RecordingProvider(make(kind, srv, sleep=Sleeps(), max_retries=3), cassette)

            class Traced:  # the loop's use of bench.tracking.tracing, in miniature
                model_id = provider.model_id

                def complete(self, messages, tools, **kw):
                    with tracing.model_span(
                        len(seen), None, model_id=self.model_id, messages=messages
                    ) as span:
                        c = provider.complete(messages, tools, **kw)
                        span.set_completion(c)
                    seen.append(c)
                    return c

            with tracing.trial_trace(f"canary {kind}", {"model": dict(provider.inner.settings.__dict__)}):
                run(Traced(), task, seed=5002, max_turns=4)
            monkeypatch.setenv("LOOPBACK_KEY", "now-the-server-wants-another-key")
            with pytest.raises(ProviderError) as err:
                provider.complete(tuple(seen[0].as_message() for _ in range(1)), TOOLS, max_tokens=64, seed=0)
            provider.close()
        tracing.flush()
    finally:
        tracing.configure(False)
        mlflow.set_tracking_uri(previous)
    assert len(seen) >= 4 and seen[0].extra["attempts"] == 4  # 429, 500, malformed, then success
    out, errtext = capfd.readouterr()
    haystacks = {
        "logs": caplog.text + "\n".join(str(r.__dict__) for r in caplog.records),
        "completions": "\n".join(repr(c) + json.dumps(dataclasses.asdict(c)) for c in seen),
        "error": str(err.value) + repr(err.value.args),
        "cassette": cassette.read_text(),
        "stdout/stderr": out + errtext,
        "mlflow db": Path(db).read_bytes().decode("latin-1"),
        "trace artifacts": "\n".join(
            p.read_bytes().decode("latin-1") for p in (tmp_path / "artifacts").rglob("*") if p.is_file()
        ),
    }
    assert "http_401" in haystacks["error"] and len(haystacks["cassette"]) > 1000
    assert "model turn" in haystacks["mlflow db"]  # the traces are there ...
    for where, text in haystacks.items():
        assert canary not in text, f"the API key leaked into {where}"  # ... and the key is not
