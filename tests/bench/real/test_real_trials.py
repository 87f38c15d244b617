"""Real trials against a real model (issue 21): SmolLM2-135M-Instruct under llama-server, through
the whole harness (Docker sandbox, MLflow, event log). What is asserted is what a real model does
to the harness, never the model's success: every trial ends with a verdict (an agent outcome or
success, never an infrastructure failure for what the model did), its log verifies, every call
carries the server's own token count next to the harness's, and no request the harness sent
after the first was larger than the configured window by the server's count.

Each trial is small (six steps of the smallest size, at most four turns) and the server keeps the shared prompt prefix
in its one slot: the first turn of the session pays the prefill (14-42 s on 2 cores)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from bench.config import compose, load
from bench.core.outcomes import AGENT, INFRA, SUCCESS
from bench.core.toolspecs import TOOLS
from bench.eventlog.verify import verify
from bench.local.server import LlamaServer
from bench.trial.runner import run

pytestmark = [pytest.mark.docker, pytest.mark.real]
# The real-trials table of each run, appended (results/ is not committed).
ROWS = Path(__file__).resolve().parents[3] / "results" / "real_trials.jsonl"


def real_trial(llama: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *over: str):
    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    cfg = load(
        compose(
            [
                "model=smollm2",
                f"model.base_url={llama.url}/v1",
                "++task.size.steps=6",
                "++task.size.filler=0",
                "limits.max_turns=4",
                "limits.max_turns_per_step=2",
                "limits.trial_timeout_s=180",
                f"study.name=real-{uuid.uuid4().hex[:6]}",
                *over,
            ]
        )
    )
    t0 = time.monotonic()
    result = run(cfg)
    wall = time.monotonic() - t0
    records = [json.loads(line) for line in result.events_path.read_text().splitlines()]
    return cfg, result, records, wall


def calls(records: list[dict]) -> list[dict]:
    return [r for r in records if r["kind"] == "model_call"]


@pytest.mark.parametrize(
    "strategy,arm", [("raw", "baseline"), ("ledger", "baseline"), ("compaction", "compaction")]
)
def test_a_real_model_meets_the_harness(strategy, arm, llama, tmp_path, monkeypatch, docker_ready):
    cfg, result, records, wall = real_trial(
        llama, tmp_path, monkeypatch, f"strategy={strategy}", f"arm={arm}"
    )
    # A verdict, never an exclusion: nothing a model says may become an infrastructure failure.
    assert result.outcome_class in (SUCCESS, AGENT), (result.failure_reason, result.outcome_class)
    assert result.outcome_class != INFRA and not result.skipped
    rebuilt, problems = verify(result.events_path)  # every context rebuilt from the log
    mc = calls(records)
    assert problems == [] and rebuilt == len([r for r in records if r["kind"] == "context"])
    assert mc and result.turns >= 1
    names = {t.name for t in TOOLS}
    for c in mc:  # the server counted every request; the harness counted the whole request too
        assert c["usage_estimated"] is False and c["tokens_harness"] > 0
        prompt = c["usage"]["input"] + c["usage"]["cache_read"] + c["usage"]["cache_write"]
        assert prompt > 0
        assert all(t["name"] in names for t in c["tool_calls"])  # grammar mode: published tools only
    from mlflow.tracking import MlflowClient

    said = MlflowClient(cfg.tracking.uri).get_run(result.run_id).data.tags.get("model_server", "")
    assert "n_params=" in said, said  # what llama-server says it serves, beside the configured identity
    window = records[0]["window"]
    assert window <= 4096  # the arm's 12,000 is bounded by the model's window
    turns = [c for c in mc if c["purpose"] == "turn"]
    for c in turns[1:]:  # once the server has counted, the budget holds by its count
        prompt = c["usage"]["input"] + c["usage"]["cache_read"] + c["usage"]["cache_write"]
        assert prompt + cfg.model["max_output"] <= window, (prompt, window)
    first = turns[0]
    row = {
        "strategy": strategy,
        "arm": arm,
        "turns": result.turns,
        "outcome": result.outcome_class,
        "failure_reason": result.failure_reason,
        "wall_s": round(wall, 1),
        "prompt_harness": first["tokens_harness"],
        "prompt_server": first["usage"]["input"]
        + first["usage"]["cache_read"]
        + first["usage"]["cache_write"],
        "tool_calls": sum(len(c["tool_calls"]) for c in turns),
        "calls": len(mc),
    }
    ROWS.parent.mkdir(parents=True, exist_ok=True)
    with ROWS.open("a") as f:
        f.write(json.dumps(row) + "\n")
