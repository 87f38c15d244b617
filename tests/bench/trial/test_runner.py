"""Whole trials through the real config, the Docker sandbox and MLflow, shrunk to a short task."""

from __future__ import annotations

import os
import subprocess

import pytest

from bench.config import compose, load
from bench.core.types import Completion
from bench.eventlog.verify import main as verify_main
from bench.eventlog.writer import comparable
from bench.trial.runner import run
from ctxlog.reader import Log

pytestmark = pytest.mark.docker
SHORT = ["task.size.steps=6"]


@pytest.fixture
def trial_cfg(tmp_path, monkeypatch, docker_ready):
    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))

    def make(*overrides: str):
        return load(compose([*SHORT, *overrides]))

    return make


def _runs(tcfg):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tcfg.tracking.uri)
    exp = client.get_experiment_by_name(tcfg.tracking.experiment)
    return client, client.search_runs([exp.experiment_id])


def _containers(run_id: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=ctxbench.run_id={run_id}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


def test_oracle_trial_succeeds_logs_curves_and_verifies(trial_cfg, tmp_path):
    tcfg = trial_cfg("strategy=ledger", "arm=compaction", "model=oracle")
    result = run(tcfg)
    assert result.status == "success" and result.turns > 0
    client, (mrun,) = _runs(tcfg)
    assert mrun.info.status == "FINISHED" and mrun.data.metrics["success"] == 1.0
    assert mrun.data.metrics["turns"] == result.turns
    history = client.get_metric_history(mrun.info.run_id, "prompt_tokens")
    assert sorted(m.step for m in history) == list(range(result.turns))
    tags = mrun.data.tags
    assert tags["strategy"] == "ledger" and tags["arm"] == "compaction" and tags["git_sha"]
    (task_input,) = client.get_run(mrun.info.run_id).inputs.dataset_inputs  # the UI's Dataset column
    assert task_input.dataset.name == tags["task_id"] and len(task_input.dataset.digest) == 16
    assert {a.path for a in client.list_artifacts(mrun.info.run_id)} >= {
        "events.jsonl",
        "config.yaml",
        "final.diff",
        "RUN.md",
    }
    assert _containers(mrun.info.run_id) == []
    # verify by run id passes; one flipped byte fails
    assert verify_main([mrun.info.run_id, "--tracking-uri", tcfg.tracking.uri]) == 0
    data = bytearray(result.events_path.read_bytes())
    data[len(data) // 2] ^= 0x01
    result.events_path.write_bytes(bytes(data))
    assert verify_main([str(result.events_path)]) == 1


class _KillAfter:
    """Wraps the real provider; kills one container of this trial's (only it: the agent's or the
    judge's, bench/sandbox/docker.py) from outside on the first call from `n` on at which it runs
    (the judge's starts with the first check)."""

    def __init__(self, inner, n, config_hash, role):
        self.inner, self.n, self.calls, self.model_id = inner, n, 0, inner.model_id
        self.config_hash, self.role, self.killed = config_hash, role, False

    def complete(self, *a, **kw):
        self.calls += 1
        if self.calls >= self.n and not self.killed:
            # The trial runs in this process; the pid label keeps out a same-config trial that
            # another test process (an xdist worker) runs at the same time.
            listing = subprocess.run(
                [
                    "docker",
                    "ps",
                    "--filter",
                    "label=ctxbench=1",
                    "--filter",
                    f"label=ctxbench.pid={os.getpid()}",
                    "--filter",
                    f"label=ctxbench.role={self.role}",
                    "--format",
                    '{{.ID}} {{.Label "ctxbench.trial"}}',
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            mine = [
                cid
                for cid, trial in (line.split() for line in listing.splitlines())
                if trial.startswith(self.config_hash)
            ]
            assert len(mine) <= 1
            if mine:
                subprocess.run(["docker", "kill", *mine], check=True, capture_output=True)
                self.killed = True
        return self.inner.complete(*a, **kw)

    def close(self):
        self.inner.close()


# The oracle runs no command: it writes files (on the host) and submits, so after the kill no
# exec of the agent's meets the dead container; only the next certification, in the judge's
# container, can tell. Killing the agent's container once ended `success` (issue 42).
@pytest.mark.parametrize("role", ["agent", "judge"])
def test_container_killed_mid_run_is_sandbox_lost_and_leaves_nothing(trial_cfg, monkeypatch, role):
    import bench.providers as providers

    real = providers.make_provider
    tcfg = trial_cfg("model=oracle")
    made = []
    monkeypatch.setattr(
        providers,
        "make_provider",
        lambda cfg: made.append(_KillAfter(real(cfg), 3, tcfg.config_hash, role)) or made[-1],
    )
    result = run(tcfg)
    assert [p.killed for p in made] == [True]
    assert (result.status, result.failure_reason) == ("error", "sandbox_lost")
    _, (mrun,) = _runs(tcfg)
    assert mrun.info.status == "FAILED" and mrun.data.tags["failure_reason"] == "sandbox_lost"
    assert "success" in mrun.data.metrics and mrun.data.metrics["success"] == 0.0
    assert _containers(mrun.info.run_id) == []


class _Truncating:
    def __init__(self, inner):
        self.inner, self.model_id = inner, inner.model_id

    def complete(self, *a, **kw):
        c = self.inner.complete(*a, **kw)
        return Completion(
            content=c.content[:5],
            tool_calls=(),
            stop_reason="max_tokens",
            usage=c.usage,
            latency_s=c.latency_s,
            ttft_s=c.ttft_s,
            model_id=c.model_id,
            request_hash=c.request_hash,
        )

    def close(self):
        pass


def test_reply_cut_at_max_tokens_is_a_named_failure_never_a_success(trial_cfg, monkeypatch):
    import bench.providers as providers

    real = providers.make_provider
    monkeypatch.setattr(providers, "make_provider", lambda cfg: _Truncating(real(cfg)))
    result = run(trial_cfg("model=oracle"))
    assert (result.status, result.failure_reason) == ("failure", "output_truncation")
    kinds = [r["kind"] for r in Log.from_path(result.events_path).records()]
    assert "output_truncation" in kinds and kinds[-1] == "trial_end"


def test_same_config_and_seed_give_the_same_event_log(trial_cfg):
    a = run(trial_cfg("model=sim", "arm=drift_compaction", "strategy=compaction", "resume=false"))
    b = run(trial_cfg("model=sim", "arm=drift_compaction", "strategy=compaction", "resume=false"))
    ra = comparable([r for r in Log.from_path(a.events_path).records()])
    rb = comparable([r for r in Log.from_path(b.events_path).records()])
    assert ra == rb and len(ra) > 20


def test_writes_to_protected_paths_are_refused_and_logged(trial_cfg):
    from bench.sandbox import create
    from bench.sandbox.base import SandboxConfig
    from bench.trial.certify import HarnessCopy
    from bench.trial.tools import Tools
    from tests.bench.trial.conftest import tiny_task

    tcfg = trial_cfg()
    files = {"tests/test_a.py": "x = 1\n", "a.py": "y = 2\n"}
    sandbox = create(SandboxConfig.from_dict(tcfg.sandbox), files, "policy-test")
    try:
        tools = Tools(
            sandbox,
            HarnessCopy(tiny_task(files=tuple(files.items()), protected=("tests/*",))),
            exec_timeout_s=10,
        )
        refused = tools.call("write_file", {"path": "tests/test_a.py", "content": "gutted"})
        assert not refused.ok and refused.policy_violation
        sneaky = tools.call("run", {"command": "echo gutted > tests/test_a.py; echo new > tests/new.py"})
        assert sneaky.policy_violation and "restored" in sneaky.text
        assert sandbox.read_file("tests/test_a.py") == "x = 1\n"
        assert "tests/new.py" not in sandbox.list_files()
        assert tools.call("write_file", {"path": "a.py", "content": "y = 3\n"}).ok
        slow = tools.call("run", {"command": "sleep 20", "timeout_s": 1})
        assert not slow.ok and "timed out" in slow.text
    finally:
        sandbox.close()
