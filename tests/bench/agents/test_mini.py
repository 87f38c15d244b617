"""mini-swe-agent plays a trial: installed from PyPI by scripts/ensure_agents.sh, its own agent
logic, commands in the Docker sandbox, the sim behind the model proxy. The harness drives and
certifies; every model request is on the record and verifies; step k's request carries the
earlier steps' turns; a drift commit is in the repository the agent works on at the next step.
And an agent that exits, hangs or floods is the agent's failure, named, never infrastructure."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

import tasks
from bench.agents import mini
from bench.agents.players import model_provider
from bench.agents.spec import AgentSpec
from bench.config import compose
from bench.core import outcomes
from bench.eventlog.verify import verify
from bench.eventlog.writer import EventLog
from bench.providers import make_provider
from bench.providers.scripted import ScriptedProvider
from bench.sandbox import create
from ctxlog import events as ev
from ctxlog.reader import Log
from tests.bench.trial.conftest import tiny_task
from tests.helpers.agents import SEED, agent_spec, play, require_installed


@pytest.fixture
def box():
    from tests.bench.trial.conftest import FILES
    from tests.helpers.configs import sandbox_config

    sandbox = create(sandbox_config("local"), FILES, "mini-fake")
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def mini_installed() -> AgentSpec:
    return require_installed(agent_spec("mini_swe_agent"))


@pytest.mark.docker
@pytest.mark.timeout(1500)  # a mini process per turn imports litellm: ~5 s of CPU each
def test_mini_plays_record_upgrade_in_docker_with_the_sim_behind_the_proxy(
    mini_installed, sandbox_cfg, docker_ready, tmp_path
):
    task = tasks.generate("record_upgrade", 0, steps=6)
    # the oracle (the sim that succeeds on every generated task in every arm): this test is about the
    # plumbing, so a step the sim's own mistakes would fail must not hide it
    model_cfg = compose(["model=oracle"]).model
    provider = model_provider(mini_installed, model_cfg, make_provider(model_cfg))
    player = mini.MiniPlayer(
        mini_installed,
        provider,
        seed=SEED,
        window=int(model_cfg.window),
        relative=False,
        max_output=8192,
        exec_timeout_s=sandbox_cfg.exec_timeout_s,
    )
    sandbox = create(sandbox_cfg, dict(task.files), "mini-e2e", {"ctxbench.test": "agents"})
    try:
        reason = play(task, sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=True)
        drift_in_repo = sandbox.git("log", "--format=%H")
    finally:
        sandbox.close()
    log = Log.from_path(tmp_path / "events.jsonl")
    turns, requests = log.of(ev.AgentTurn), log.of(ev.AgentRequest)
    passed = [s.step for s in log.of(ev.StepStatus) if s.status == "passed"]
    assert reason == "" and len(passed) == len(task.steps), (reason, [t.detail for t in turns])
    # every model request is on the record: as many as mini's own count of its calls
    assert len(requests) == turns[-1].agent_count == sum(t.requests for t in turns) > 0
    rebuilt, problems = verify(tmp_path / "events.jsonl")
    assert problems == [] and rebuilt == len(requests)
    # step 2's first request carries step 1's turns: one session
    by_step = {}
    for call in log.calls:
        step = next((s.step for s in reversed(log.of(ev.StepStart)) if s.seq < call.context.seq), None)
        by_step.setdefault(step, []).append(call.messages)
    last_of_s01, first_of_s02 = by_step["s01"][-1], by_step["s02"][0]
    assert first_of_s02[: len(last_of_s01)] == last_of_s01 and len(first_of_s02) > len(last_of_s01)
    # a drift commit landed between steps and is in the repository the agent works on
    drifts = log.of(ev.Drift)
    assert drifts and all(d.commit in drift_in_repo for d in drifts)
    after = [t for t in turns if t.seq > drifts[0].seq]
    assert after, "the step after the drift was played"


FAKE_DRIVERS = {
    "exits": "import sys; sys.stdin.readline(); sys.exit(1)\n",
    "hangs": "import sys, time\nsys.stdin.readline(); sys.stdin.readline(); time.sleep(60)\n",
    "floods": "import os, sys\nsys.stdin.readline(); sys.stdin.readline()\nos.write(2, b'x' * (4 << 20))\n"
    "import time; time.sleep(60)\n",
    "garbles": "import sys\nsys.stdin.readline(); sys.stdin.readline(); print('hello from the agent'); sys.stdout.flush()\n"
    "import time; time.sleep(60)\n",
}
EXPECTED = {"exits": "model_error", "hangs": "timeout", "floods": "model_error", "garbles": "model_error"}


@pytest.mark.parametrize("how", sorted(FAKE_DRIVERS))
def test_an_agent_that_exits_hangs_floods_or_garbles_is_the_agents_failure(how, box, tmp_path, monkeypatch):
    driver = tmp_path / "driver.py"
    driver.write_text(FAKE_DRIVERS[how])
    monkeypatch.setattr(mini, "DRIVER", driver)
    monkeypatch.setattr(mini, "installed", lambda spec: Path(sys.executable))
    spec = AgentSpec.from_dict(
        {
            **agent_spec("mini_swe_agent").__dict__,
            "install": {"registry": "pypi", "package": "mini-swe-agent", "bin": "venv/bin/python"},
            "limits": {"turn_timeout_s": 3, "output_limit_bytes": 1 << 20},
        }
        | {"commands": {}, "env": {}, "config_files": {}, "compaction": {}, "arms": {}}
    )
    model_cfg = compose(["model=sim"]).model
    player = mini.MiniPlayer(
        spec,
        make_provider(model_cfg),
        seed=SEED,
        window=0,
        relative=False,
        max_output=1000,
        exec_timeout_s=10,
    )
    started = time.monotonic()
    reason = play(tiny_task(), box, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    assert reason == EXPECTED[how] and outcomes.outcome_class(reason) == outcomes.AGENT
    assert time.monotonic() - started < 30 and player.proc is None  # reaped: nothing of it outlives the turn
    (turn,) = Log.from_path(tmp_path / "events.jsonl").of(ev.AgentTurn)
    assert turn.requests == 0 and turn.detail


BROKEN_ENVIRONMENT = """import importlib.util, sys
spec = importlib.util.spec_from_file_location("mini_driver", {driver!r})
driver = importlib.util.module_from_spec(spec)
spec.loader.exec_module(driver)
def execute(self, action, cwd="", *, timeout=None):
    raise KeyError("a bug in ctxbench's environment")
driver.HarnessEnvironment.execute = execute
sys.exit(driver.main())
"""


def test_a_bug_in_our_side_of_the_driver_is_the_harness_error_never_the_agents(
    mini_installed, box, tmp_path, monkeypatch
):
    """mini's real driver, its environment (ctxbench's code) raising on the first command: not
    one of mini's or litellm's errors, so it is the harness's failure, traceback in agent_turn."""
    driver = tmp_path / "driver.py"
    driver.write_text(BROKEN_ENVIRONMENT.format(driver=str(mini.DRIVER)))
    monkeypatch.setattr(mini, "DRIVER", driver)
    provider = ScriptedProvider([[{"name": "bash", "args": {"command": "ls"}}]], when_done="stop")
    player = mini.MiniPlayer(
        mini_installed, provider, seed=SEED, window=0, relative=False, max_output=1000, exec_timeout_s=10
    )
    reason = play(tiny_task(), box, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    log = Log.from_path(tmp_path / "events.jsonl")
    assert reason == "harness_error" and outcomes.outcome_class(reason) != outcomes.AGENT
    (turn,) = log.of(ev.AgentTurn)
    assert turn.requests == 1 and turn.detail.startswith("harness_error: ")
    assert "Traceback" in turn.detail and "a bug in ctxbench's environment" in turn.detail


def test_mini_meets_the_emulated_overflow_and_it_is_a_context_overflow(mini_installed, box, tmp_path):
    """The proxy refuses as OpenAI does (`context_length_exceeded`); litellm reads that as
    ContextWindowExceededError, mini aborts the step: the agent's context overflow, never ours."""
    model_cfg = compose(["model=sim"]).model
    player = mini.MiniPlayer(
        mini_installed,
        make_provider(model_cfg),
        seed=SEED,
        window=500,
        relative=False,
        max_output=1000,
        exec_timeout_s=10,
    )
    reason = play(tiny_task(), box, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    log = Log.from_path(tmp_path / "events.jsonl")
    (refusal,) = [r for r in log.of(ev.AgentReply) if r.status == 400]
    assert '"code": "context_length_exceeded"' in refusal.body and not log.of(ev.ModelCall)
    assert reason == "context_overflow", [t.detail for t in log.of(ev.AgentTurn)]
    assert log.of(ev.ContextOverflow)[0].window == 500


def test_one_process_plays_the_trial_and_a_dead_one_is_replaced_by_one_resuming_the_session(
    mini_installed, box, tmp_path
):
    """`keep_process`: the instructions go over one process's pipe (no ~5 s of imports a turn). A
    process that dies between turns is the agent's own business only if it is in a turn: between
    turns the next instruction starts a new one, which resumes the session file."""
    from bench.sim.dialects import DIALECTS, DialectProvider
    from tests.bench.trial.conftest import CALC

    task = tiny_task()
    steps = tuple(task.steps[0].__class__(**{**task.steps[0].__dict__, "id": f"s0{k}"}) for k in (1, 2, 3))
    task = task.__class__(**{**task.__dict__, "steps": steps})
    script = [
        [{"name": "write_file", "args": {"path": "calc.py", "content": CALC}}],
        [{"name": "submit_step", "args": {"notes": "add stays", "invariants": []}}],
    ] * 3
    provider = DialectProvider(ScriptedProvider(script, when_done="stop"), DIALECTS.load("mini_bash"))
    player = mini.MiniPlayer(
        mini_installed, provider, seed=SEED, window=0, relative=False, max_output=1000, exec_timeout_s=10
    )
    pids: list[int] = []
    play_turn = player.play

    def play_and_watch(instruction):
        end = play_turn(instruction)
        # idle, waiting for the next instruction
        assert player.proc is not None and player.proc.poll() is None
        pids.append(player.proc.pid)
        if len(pids) == 1:
            os.killpg(player.proc.pid, 9)  # dies between turns
        return end

    player.play = play_and_watch  # type: ignore[method-assign]
    reason = play(task, box, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    proc = player.proc
    player.close()
    assert proc is not None and proc.poll() is not None and player.proc is None  # close() ends it
    log = Log.from_path(tmp_path / "events.jsonl")
    assert reason == "" and pids[0] != pids[1] == pids[2], (reason, pids)
    turns = log.of(ev.AgentTurn)
    assert [t.exit_code for t in turns] == [None] * 3 and turns[-1].agent_count == len(script)
    calls = log.calls
    assert calls[2].messages[: len(calls[1].messages)] == calls[1].messages  # step 2 resumed step 1's session
    assert verify(tmp_path / "events.jsonl")[1] == []
