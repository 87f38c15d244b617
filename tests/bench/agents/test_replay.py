"""An agent trial recorded (`model.record=PATH`), then replayed offline (`model=replay`) to the
same final tree, with the same `agent_request` bodies byte for byte, through the model proxy
(docs/agents.md, docs/real_models.md §7).

The cassette holds what the proxy forwarded: with the sim behind an agent it is recorded outside
the agent's dialect (bench/agents/players.py), so a replay needs neither the sim nor the dialect.
A replay that meets a request never recorded is the model failing (`provider_error`), never
the agent's.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bench.agents.players import model_provider
from bench.agents.spec import AgentSpec
from bench.config import compose, load
from bench.core import outcomes
from bench.eventlog.verify import verify
from bench.providers import make_provider
from bench.providers.replay import RecordingProvider
from bench.sim.dialects import DialectProvider
from tests.bench.agents.test_mini import mini_installed  # noqa: F401 - a fixture
from tests.bench.trial.conftest import CALC, tiny_task

SCRIPT = [
    [{"name": "bash", "args": {"command": "ls"}}],
    [{"name": "bash", "args": {"command": f"printf '%s' '{CALC}' > calc.py && python3 -c 'import calc'"}}],
    [{"name": "bash", "args": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}],
]


def _records(path: Path, kind: str) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["kind"] == kind]


def _trial(monkeypatch, results: Path, *overrides: str, script: list | None = None):
    import bench.trial.runner as runner

    monkeypatch.setenv("CTXBENCH_RESULTS", str(results))
    monkeypatch.setattr(runner.tasks, "generate", lambda *a, **k: tiny_task())
    cfg = compose(
        ["agent=mini_swe_agent", "sandbox=local", f"study.name=t-{uuid.uuid4().hex[:8]}", *overrides]
    )
    if script is not None:
        OmegaConf.update(cfg, "model.script", script)
        OmegaConf.update(cfg, "model.when_done", "stop")
    return runner.run(load(cfg))


@pytest.mark.timeout(600)
def test_a_mini_trial_replays_offline_to_the_same_tree(mini_installed, tmp_path, monkeypatch):  # noqa: F811
    results = tmp_path / "results"
    cassette = tmp_path / "mini.cassette.jsonl"
    recorded = _trial(monkeypatch, results, "model=adversary", f"+model.record={cassette}", script=SCRIPT)
    assert recorded.status == "success", recorded.failure_reason
    replayed = _trial(monkeypatch, results, "model=replay", f"model.cassette={cassette}")
    assert replayed.status == "success", replayed.failure_reason
    a, b = recorded.events_path, replayed.events_path
    assert _records(a, "trial_end")[-1]["final_tree_sha"] == _records(b, "trial_end")[-1]["final_tree_sha"]
    sent, resent = _records(a, "agent_request"), _records(b, "agent_request")
    assert len(sent) == len(SCRIPT) == len(cassette.read_text().splitlines())
    assert [r["body"] for r in resent] == [r["body"] for r in sent]
    assert [r["body"] for r in _records(b, "agent_reply")] == [r["body"] for r in _records(a, "agent_reply")]
    assert verify(b)[1] == []

    # the replay plays the cassette, not a model: a request it never saw is the model failing
    lines = cassette.read_text().splitlines()
    cassette.write_text("\n".join(lines[:1]) + "\n")
    lost = _trial(monkeypatch, results, "model=replay", f"model.cassette={cassette}")
    assert (
        lost.failure_reason == "provider_error"
        and outcomes.outcome_class(lost.failure_reason) != outcomes.AGENT
    )
    # and the turn ends there: mini is not left retrying the proxy's 500 (its 10 tries, minutes of
    # backoff); what may slip in first is the OpenAI client's own 2 quick retries of the one call
    first, *failed = [r["status"] for r in _records(lost.events_path, "agent_reply")]
    assert first == 200 and set(failed) == {500} and len(failed) <= 3
    (turn,) = _records(lost.events_path, "agent_turn")
    assert turn["detail"].startswith("model_failed: the model behind the proxy failed: provider_error")


def test_a_recorded_sim_is_recorded_outside_the_agents_dialect(tmp_path):
    spec = AgentSpec.from_dict(OmegaConf.to_container(compose(["agent=mini_swe_agent"]).agent, resolve=True))
    model_cfg = compose(["model=sim", f"+model.record={tmp_path / 'c.jsonl'}"]).model
    provider = model_provider(spec, model_cfg, make_provider(model_cfg))
    assert isinstance(provider, RecordingProvider) and isinstance(provider.inner, DialectProvider)
    assert provider.path == tmp_path / "c.jsonl"
    replay_cfg = compose(["model=replay", f"model.cassette={tmp_path / 'c.jsonl'}"]).model
    (tmp_path / "c.jsonl").write_text("")
    replayed = make_provider(replay_cfg)
    assert model_provider(spec, replay_cfg, replayed) is replayed  # the agent's own tools, as recorded


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_a_mini_trial_with_the_sim_replays_in_docker(
    mini_installed,
    sandbox_cfg,
    docker_ready,
    tmp_path,  # noqa: F811
    monkeypatch,
):
    """The whole path: record_upgrade with drift, the sim speaking mini's bash behind the proxy,
    in the Docker sandbox; the replay has no sim and gets the same tree."""
    import bench.trial.runner as runner

    results, cassette = tmp_path / "results", tmp_path / "mini.cassette.jsonl"
    monkeypatch.setenv("CTXBENCH_RESULTS", str(results))
    base = ["agent=mini_swe_agent", "arm=drift", "task=record_upgrade", "task.size.steps=6", "sandbox=docker"]
    recorded = runner.run(load(compose([*base, "model=sim", f"+model.record={cassette}", "study.name=rec"])))
    replayed = runner.run(
        load(compose([*base, "model=replay", f"model.cassette={cassette}", "study.name=rep"]))
    )
    a, b = recorded.events_path, replayed.events_path
    assert recorded.status == replayed.status and recorded.turns == replayed.turns > 0
    assert _records(a, "trial_end")[-1]["final_tree_sha"] == _records(b, "trial_end")[-1]["final_tree_sha"]
    assert [r["body"] for r in _records(b, "agent_request")] == [
        r["body"] for r in _records(a, "agent_request")
    ]
    assert _records(b, "drift") and verify(b)[1] == []
