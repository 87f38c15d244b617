"""Host-only trial fixtures: a tiny task with the shipped runner, the scripted model, LocalSandbox.

`tiny_task()` is one step ("write calc.py with add()") certified by the real fast runner and a
final real pytest, with protected tests/ and tools/: enough for every certification guard,
and a trial takes about a second. `scripted_trial(script, ...)` runs it through the real
runner (`bench.trial.runner.run`) with `model=adversary`, the script given, `sandbox=local`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from bench.config import TrialConfig, compose, load
from bench.sandbox import create
from bench.sandbox.base import SandboxConfig
from bench.sandbox.local import LocalSandbox
from tasks.common.run_tests import RUNNER_PATH, RUNNER_SOURCE
from tasks.spec import Invariant, Step, StepPlan, TaskSpec
from tests.helpers.configs import sandbox_config

TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"
CALC = "def add(a, b):\n    return a + b\n"
CHECK = f"python3 -B {RUNNER_PATH} tests/test_calc.py"
FINAL = "python3 -B -m pytest -q tests"
PROTECTED = ("tests/**", "tools/**", "pytest.ini")
FILES = {
    "README.md": "# calc\n",
    "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\ntestpaths = tests\n",
    "tests/test_calc.py": TEST_CALC,
    RUNNER_PATH: RUNNER_SOURCE,
}
SOLVE = [
    [{"name": "write_file", "args": {"path": "calc.py", "content": CALC}}],
    [{"name": "submit_step", "args": {"notes": "add() stays", "invariants": []}}],
]


class _NoOracle:
    def edits_for(self, step_id: str, perceived_files: Any, recalled_facts: Any) -> StepPlan:
        return StepPlan()


def tiny_task(**changes: Any) -> TaskSpec:
    step = Step(
        "s01",
        "Write calc.add",
        "Create calc.py with add(a, b) returning a + b.",
        ("calc.py",),
        CHECK,
        (Invariant("has-add", "calc.add stays", check=CHECK, stated="s01"),),
    )
    spec = TaskSpec(
        task_id="tiny/0",
        family="tiny",
        seed=0,
        title="calc",
        text="Write calc.add.",
        files=tuple(sorted(FILES.items())),
        invariants=(),
        steps=(step,),
        final_check=FINAL,
        protected=PROTECTED,
        traps=(),
        drift=(),
        test_command=FINAL,
        oracle=_NoOracle(),
    )
    return spec.__class__(**{**spec.__dict__, **changes})


@pytest.fixture
def local_cfg() -> SandboxConfig:
    return sandbox_config("local")


@pytest.fixture
def box(local_cfg: SandboxConfig) -> Iterator[LocalSandbox]:
    sandbox = create(local_cfg, FILES, "trial-test")
    assert isinstance(sandbox, LocalSandbox)
    yield sandbox
    sandbox.close()


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def kinds(path: Path, kind: str) -> list[dict[str, Any]]:
    return [r for r in events(path) if r["kind"] == kind]


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One results folder (one MLflow store) per test module: creating a store costs seconds."""
    return tmp_path_factory.mktemp("results")


@pytest.fixture
def scripted_trial(
    results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[Any, TrialConfig]]:
    """Run the tiny task (or `task=...`) with a scripted model on LocalSandbox, in a study of
    its own; returns (TrialResult, TrialConfig)."""
    import bench.trial.runner as runner

    monkeypatch.setenv("CTXBENCH_RESULTS", str(results_dir))
    real_create = runner.create_sandbox

    def create_and_remember(*a, **k):
        sandbox = real_create(*a, **k)
        play.sandboxes.append(sandbox)  # type: ignore[attr-defined]
        return sandbox

    monkeypatch.setattr(runner, "create_sandbox", create_and_remember)

    def play(script: list, *overrides: str, task: TaskSpec | None = None, when_done: str = "stop"):
        monkeypatch.setattr(runner.tasks, "generate", lambda *a, **k: task or tiny_task())
        cfg = compose(
            [
                "model=adversary",
                "sandbox=local",
                "limits.max_turns_per_step=4",
                f"study.name=t-{uuid.uuid4().hex[:8]}",
                *overrides,
            ]
        )
        OmegaConf.update(cfg, "model.script", script)
        OmegaConf.update(cfg, "model.when_done", when_done)
        tcfg = load(cfg)
        return runner.run(tcfg), tcfg

    play.sandboxes = []  # type: ignore[attr-defined]  # every sandbox the trials made, to check cleanup
    return play


def mlflow_run(tcfg: TrialConfig, run_id: str) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tcfg.tracking.uri).get_run(run_id)
