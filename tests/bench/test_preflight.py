"""Bad input is one clear line: exit status 2, no traceback, nothing created (bench/preflight.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench import preflight
from bench.config import ROOT

LOCAL = "sandbox=local"


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["task.seed=-1"], "task.seed"),
        (["task.size.steps=0"], "task.size.steps"),
        (["task.size.steps=abc"], "task.size.steps"),
        (["rep=-1"], "rep"),
        (["limits.max_turns=0"], "limits"),
        (["arm.window=5"], "arm.window"),
        (["strategy=nope"], "strategy/nope"),
        (["strategy.nope=1"], "strategy.nope"),
        (["+strategy.nope=1"], "nope"),
        (["model=nope"], "model/nope"),
        (["model=adversary", "model.attack=nope"], "model.attack"),
        (["model=anthropic"], "ANTHROPIC_API_KEY"),
        (["model=replay"], "model.cassette"),
        (["sandbox.memory=lots"], "memory"),
        (["tracking.uri=http://127.0.0.1:9"], "tracking.uri"),
        (["tracking.uri=sqlite:////nonexistent/dir/mlflow.db"], "tracking.uri"),
        (["tracking.uri=file:///tmp/x"], "tracking.uri"),
        (["-m", "task.seed=0,1,-2"], "task.seed"),
        (["-m", "strategy=raw,nope"], "strategy/nope"),
    ],
)
def test_bad_input_is_one_line_naming_the_key(results, capsys, argv, names):
    with pytest.raises(SystemExit) as exit_:
        preflight.check([*argv, LOCAL])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ctxbench: bad input: ") and names in err, err
    assert list(results.iterdir()) == []


def test_good_input_passes_and_creates_nothing(results, capsys):
    preflight.check(["task.seed=3", "strategy=raw", LOCAL])
    preflight.check(["-m", "experiment=demo", LOCAL])
    assert capsys.readouterr().err == "" and list(results.iterdir()) == []


def test_hydras_own_flags_are_left_to_hydra(results, capsys):
    # With a flag of Hydra's, even a bad value is Hydra's to report (it prints the config asked
    # for, or its help): preflight neither exits nor says anything nor creates anything.
    assert preflight.check(["--help"]) is None
    assert preflight.check(["--cfg", "job", "task.seed=-1"]) is None
    assert capsys.readouterr().err == "" and list(results.iterdir()) == []
    with pytest.raises(SystemExit):  # the same bad value without the flag is refused
        preflight.check(["task.seed=-1", LOCAL])


def test_sweeps_are_checked_value_by_value():
    jobs = preflight.plan(["strategy=raw,ledger", "task.seed=0,1,2", "rep=0"], multirun=True)
    assert jobs[0] == ["strategy=raw", "task.seed=0", "rep=0"]
    assert ["strategy=ledger", "task.seed=0", "rep=0"] in jobs and [
        "strategy=raw",
        "task.seed=2",
        "rep=0",
    ] in jobs
    assert len(jobs) == 1 + 1 + 2
    grid = preflight.plan(["experiment=grid", "task.seed=4"], multirun=True)
    assert all("task.seed=4" in job for job in grid) and len(grid) == 1 + 3 + 3 + 2


def _cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["task.seed=-1"], {}),
        (["-m", "strategy=raw,ledger", "task.seed=0,-1"], {}),
        (["model=anthropic"], {"ANTHROPIC_API_KEY": ""}),
        (["tracking.uri=http://127.0.0.1:9"], {}),
        ([], {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}),
    ],
)
def test_the_command_line_exits_2_with_one_line_and_writes_nothing(tmp_path, args, env):
    proc = _cli(*args, env={"CTXBENCH_RESULTS": str(tmp_path), **env})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and proc.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no hydra/ run folder, no mlflow.db, no trials/


def test_a_plain_run_is_composed_once_and_its_parts_built_once(results, monkeypatch):
    """Preflight's composition is its job's, and the parts it built are the trial's: the trial
    neither validates nor builds again (bench/trial/runner.py `run(cfg, prepared)`)."""
    import hydra._internal.config_loader_impl as loader

    from bench.config import compose
    from bench.trial import runner

    compose_once = loader.ConfigLoaderImpl.load_configuration
    seen: list[int] = []
    monkeypatch.setattr(
        loader.ConfigLoaderImpl, "load_configuration", lambda *a, **k: seen.append(1) or compose_once(*a, **k)
    )
    args = ["task.seed=3", "limits.max_turns=1", LOCAL]
    prepared = preflight.check(args)
    assert len(seen) == 1 and prepared is not None and prepared.parts is not None
    assert prepared.trial.task.seed == 3 and prepared.parts.task.seed == 3
    assert preflight.check(["-m", "experiment=demo", LOCAL]) is None  # a sweep's jobs build in their workers

    def build_again(tcfg):
        raise AssertionError("the trial built its parts again")

    monkeypatch.setattr(runner, "prepare", build_again)
    result = runner.run(compose(args), prepared)
    assert result.failure_reason == "turn_budget"  # it ran, on preflight's parts


def test_parts_built_for_another_config_are_closed_and_not_used(results, monkeypatch):
    from bench.config import compose
    from bench.trial import runner

    prepared = preflight.check(["task.seed=3", LOCAL])
    assert prepared is not None and prepared.parts is not None
    closed, built = [], []

    def build(tcfg):
        built.append(tcfg.task.seed)
        raise RuntimeError("stop here")

    monkeypatch.setattr(prepared.parts.provider, "close", lambda: closed.append(1))
    monkeypatch.setattr(runner, "prepare", build)
    with pytest.raises(RuntimeError, match="stop here"):
        runner.run(compose(["task.seed=4", LOCAL]), prepared)
    assert closed == [1] and built == [4]
