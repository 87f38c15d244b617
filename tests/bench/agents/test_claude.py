"""Claude Code plays a trial: its native binary from the agent cache (scripts/ensure_agents.sh),
run inside the Docker sandbox as the agent's uid with the install and the proxy's socket mounted
read-only, the sim behind the proxy speaking its tools. The harness drives and certifies; every
model request is on the record, as many as Claude Code's own session file holds, and verifies;
step k's request carries the earlier steps' turns; a drift commit is in the repository the agent
works on at the next step. An agent that exits, hangs or floods is the agent's failure, and the
harness's turn limit reaches Claude Code as a refusal that ends its turn."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import tasks
from bench.agents import claude
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


def _spec(**over) -> AgentSpec:
    return agent_spec("claude_code", **over)


@pytest.fixture(scope="module")
def claude_installed() -> AgentSpec:
    return require_installed(_spec())


@pytest.mark.docker
@pytest.mark.timeout(1500)
def test_claude_code_plays_record_upgrade_in_docker_with_the_sim_behind_the_proxy(
    claude_installed, sandbox_cfg, docker_ready, tmp_path
):
    task = tasks.generate("record_upgrade", 0, steps=6)
    # the oracle (the sim that succeeds on every generated task in every arm): this test is about the
    # plumbing, so a step the sim's own mistakes would fail must not hide it
    model_cfg = compose(["model=oracle"]).model
    provider = model_provider(claude_installed, model_cfg, make_provider(model_cfg))
    player = claude.ClaudePlayer(
        claude_installed,
        provider,
        seed=SEED,
        window=int(model_cfg.window),
        relative=False,
        max_output=8192,
        exec_timeout_s=sandbox_cfg.exec_timeout_s,
    )
    sandbox = create(
        sandbox_cfg, dict(task.files), "claude-e2e", {"ctxbench.test": "agents"}, mounts=player.mounts
    )
    try:
        reason = play(task, sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=True)
        drift_in_repo = sandbox.git("log", "--format=%H")
    finally:
        sandbox.close()
    log = Log.from_path(tmp_path / "events.jsonl")
    turns, requests = log.of(ev.AgentTurn), log.of(ev.AgentRequest)
    passed = [s.step for s in log.of(ev.StepStatus) if s.status == "passed"]
    assert reason == "" and len(passed) == len(task.steps), (reason, [t.detail for t in turns])
    # every model request is on the record: as many as Claude Code's own session file holds
    session = claude.session_replies((tmp_path / claude.SESSION_FILE).read_text())
    assert len(requests) == sum(t.requests for t in turns) == session > 0
    assert {r.thread for r in requests} == {"main"}
    rebuilt, problems = verify(tmp_path / "events.jsonl")
    assert problems == [] and rebuilt == len(requests)
    # step 2's first request carries step 1's turns: one session, resumed
    by_step: dict[str | None, list] = {}
    for call in log.calls:
        step = next((s.step for s in reversed(log.of(ev.StepStart)) if s.seq < call.context.seq), None)
        by_step.setdefault(step, []).append(call.messages)
    last_of_s01, first_of_s02 = by_step["s01"][-1], by_step["s02"][0]
    assert first_of_s02[: len(last_of_s01)] == last_of_s01 and len(first_of_s02) > len(last_of_s01)
    # a drift commit landed between steps and is in the repository the agent works on
    drifts = log.of(ev.Drift)
    assert drifts and all(d.commit in drift_in_repo for d in drifts)
    assert [t for t in turns if t.seq > drifts[0].seq], "the step after the drift was played"


FAKE_CLAUDE = {
    "exits": "echo 'not the agent you were looking for' >&2; exit 1\n",
    "hangs": "sleep 60\n",
    "floods": "head -c 4000000 /dev/zero | tr '\\0' x\n",
}
EXPECTED = {"exits": "model_error", "hangs": "timeout", "floods": "model_error"}


@pytest.mark.docker
@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", sorted(FAKE_CLAUDE))
def test_an_agent_that_exits_hangs_or_floods_is_the_agents_failure(
    how, sandbox_cfg, docker_ready, tmp_path, monkeypatch
):
    fake = tmp_path / "install"
    fake.mkdir(mode=0o755)
    (fake / "claude").write_text("#!/bin/sh\n" + FAKE_CLAUDE[how])
    (fake / "claude").chmod(0o755)
    monkeypatch.setattr(claude, "installed", lambda spec: fake / "claude")
    spec = _spec(limits={"turn_timeout_s": 5, "output_limit_bytes": 1 << 20})
    player = claude.ClaudePlayer(
        spec,
        make_provider(compose(["model=sim"]).model),
        seed=SEED,
        window=0,
        relative=False,
        max_output=1000,
        exec_timeout_s=10,
    )
    task = tiny_task()
    sandbox = create(
        sandbox_cfg, dict(task.files), f"claude-{how}", {"ctxbench.test": "agents"}, mounts=player.mounts
    )
    try:
        started = time.monotonic()
        reason = play(task, sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=False)
        left = sandbox.exec("cat /proc/[0-9]*/comm").output  # nothing of the agent's is left
    finally:
        sandbox.close()
    assert reason == EXPECTED[how] and outcomes.outcome_class(reason) == outcomes.AGENT
    assert time.monotonic() - started < 120 and "claude" not in left and "sleep" not in left
    (turn,) = Log.from_path(tmp_path / "events.jsonl").of(ev.AgentTurn)
    assert turn.requests == 0 and turn.detail


@pytest.mark.docker
@pytest.mark.timeout(300)
def test_the_harnesss_turn_limit_ends_claude_codes_turn_and_the_step_is_given_up(
    claude_installed, sandbox_cfg, docker_ready, tmp_path
):
    """A model that never stops calling tools: the proxy asks the referee before each main request,
    and past the step's turns Claude Code gets a 400 naming the limit and ends; the step is given
    up (step_failed, the agent's), and the refused request is on the record too."""
    provider = ScriptedProvider(
        [[{"name": "Bash", "args": {"command": "echo again"}}]] * 50, when_done="stop"
    )
    player = claude.ClaudePlayer(
        claude_installed, provider, seed=SEED, window=0, relative=False, max_output=1000, exec_timeout_s=10
    )
    task = tiny_task()
    sandbox = create(
        sandbox_cfg, dict(task.files), "claude-turns", {"ctxbench.test": "agents"}, mounts=player.mounts
    )
    try:
        reason = play(
            task, sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=False, max_turns_per_step=3
        )
    finally:
        sandbox.close()
    log = Log.from_path(tmp_path / "events.jsonl")
    assert reason == "step_failed" and outcomes.outcome_class(reason) == outcomes.AGENT
    refused = [r for r in log.of(ev.AgentReply) if r.status == 400]
    assert len(refused) == 1 and "3 turns used in this step" in refused[0].body
    assert len(log.of(ev.ModelCall)) == 3 and len(log.of(ev.AgentRequest)) == 4
    # its own error is <synthetic>
    assert claude.session_replies((tmp_path / claude.SESSION_FILE).read_text()) == 3
    rebuilt, problems = verify(tmp_path / "events.jsonl")
    assert problems == [] and rebuilt == 3


def test_the_players_mounts_are_the_install_and_the_socket_folder_read_only(monkeypatch, tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "claude").write_text("")
    monkeypatch.setattr(claude, "installed", lambda spec: fake / "claude")
    player = claude.ClaudePlayer(
        _spec(),
        make_provider(compose(["model=sim"]).model),
        seed=1,
        window=0,
        relative=False,
        max_output=1000,
        exec_timeout_s=10,
    )
    (install, sockets) = player.mounts
    assert (install.source, install.target) == (
        fake,
        claude.BIN_DIR,
    ) and player.bin == f"{claude.BIN_DIR}/claude"
    assert sockets.target == claude.SOCKET_DIR and oct(Path(sockets.source).stat().st_mode & 0o777) == "0o755"
    assert (
        player.session
        == claude.ClaudePlayer(
            _spec(),
            None,
            seed=1,
            window=0,
            relative=False,  # type: ignore[arg-type]
            max_output=1,
            exec_timeout_s=1,
        ).session
    )  # the seed's, for replay


def test_stream_json_and_the_session_file_are_read_as_claude_code_writes_them():
    out = (
        '{"type":"system","subtype":"init","session_id":"s"}\nnoise\n'
        '{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":9000}}\n'
        '{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"done"}\n'
    )
    kinds = [(e["type"], e.get("subtype")) for e in claude.stream_events(out)]
    assert kinds == [("system", "init"), ("system", "compact_boundary"), ("result", "success")]
    session = "\n".join(
        [
            '{"type":"user","message":{"role":"user","content":"x"}}',
            '{"type":"assistant","message":{"id":"msg_1","model":"m","content":[{"type":"text"}]}}',
            '{"type":"assistant","message":{"id":"msg_1","model":"m","content":[{"type":"tool_use"}]}}',  # one reply
            '{"type":"assistant","message":{"id":"msg_2","model":"m"}}',
            '{"type":"assistant","message":{"id":"e","model":"<synthetic>"}}',
        ]
    )  # Claude Code's own API-error entry
    assert claude.session_replies(session) == 2


def test_agent_claude_code_composes_to_its_player_with_the_sim_speaking_its_dialect(claude_installed):
    from types import SimpleNamespace

    from bench.agents import players
    from bench.config import load
    from bench.sim.dialects import DialectProvider

    tcfg = load(compose(["agent=claude_code", "arm=compaction"]))
    parts = SimpleNamespace(
        provider=make_provider(tcfg.model),
        window=12000,
        max_output=4096,
        sandbox=SimpleNamespace(exec_timeout_s=30.0),
    )
    player = players.make_player(tcfg, parts, 1)
    assert isinstance(player, claude.ClaudePlayer) and isinstance(player.provider, DialectProvider)
    assert (player.window, player.relative) == (12000, True)  # the arm's window above its fixed overhead
    assert [m.target for m in player.mounts] == [claude.BIN_DIR, claude.SOCKET_DIR]


def test_each_compact_boundary_is_a_compaction_event_with_the_summary_the_proxy_answered(
    monkeypatch, tmp_path
):
    from types import SimpleNamespace

    monkeypatch.setattr(claude, "installed", lambda spec: tmp_path / "claude")
    player = claude.ClaudePlayer(
        _spec(),
        None,
        seed=1,
        window=0,
        relative=True,  # type: ignore[arg-type]
        max_output=1,
        exec_timeout_s=1,
    )
    log = EventLog(tmp_path / "events.jsonl")
    log.append(ev.ModelCall(turn=4, purpose="compaction", content="SUMMARY OF EARLIER TURNS ..."))
    player.seat = SimpleNamespace(log=log)  # type: ignore[assignment]
    player.proxy = SimpleNamespace(turn=5)  # type: ignore[assignment]
    player._compactions(
        claude.stream_events(
            '{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":25165,'
            '"post_tokens":5947}}\n{"type":"result","subtype":"success","is_error":false}\n'
        )
    )
    log.close()
    (c,) = Log.from_path(tmp_path / "events.jsonl").of(ev.Compaction)
    assert (c.turn, c.tokens_before, c.tokens_after, c.summary) == (
        5,
        25165,
        5947,
        "SUMMARY OF EARLIER TURNS ...",
    )
    assert c.usage == {"trigger": "auto"} and c.summary_sha
