"""Codex CLI plays a trial: installed from npm by scripts/ensure_agents.sh, its own binary in the
Docker sandbox (network_mode=none) as the agent's uid, reaching the model proxy only through the
forwarder to the proxy's read-only unix socket, the sim behind the proxy speaking Codex's
exec_command. The harness drives and certifies; every model request is on the record, as many as
Codex's own rollout files count, and verifies; step k's request carries the earlier steps' turns;
a drift commit is in the repository Codex works on at the next step, and Codex is shown the
drifted files. And a Codex that exits, hangs, floods or garbles is the agent's failure, named;
a forwarder that cannot reach the proxy is the harness's."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import tasks
from bench.agents import codex
from bench.agents.install import STAMP, cache_root
from bench.agents.players import model_provider
from bench.agents.spec import AgentSpec
from bench.config import ConfigError, compose
from bench.core import outcomes
from bench.core.render import content_sha
from bench.eventlog.verify import verify
from bench.eventlog.writer import EventLog
from bench.providers import make_provider
from bench.sandbox import create
from bench.sim.dialects.codex import output
from ctxlog import events as ev
from ctxlog.reader import Log
from tests.bench.agents.test_mini import SEED, _play  # SEED: the one _play logs, which verify hashes with
from tests.bench.trial.conftest import tiny_task

pytestmark = pytest.mark.docker


def _spec(**limits) -> AgentSpec:
    d = OmegaConf.to_container(compose(["agent=codex"]).agent, resolve=True)
    assert isinstance(d, dict)
    return AgentSpec.from_dict({**d, "limits": {**d["limits"], **limits}})


@pytest.fixture(scope="module")
def codex_installed() -> AgentSpec:
    spec = _spec()
    try:
        codex.installed(spec)
    except ConfigError as exc:
        if (
            os.environ.get("CTXBENCH_REQUIRE_DOCKER") == "1"
        ):  # make test installs it (scripts/ensure_agents.sh)
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(f"{exc} ({cache_root()})")
    return spec


def _player(spec: AgentSpec, model: str = "oracle", window: int = 0) -> codex.CodexPlayer:
    model_cfg = compose([f"model={model}"]).model
    return codex.CodexPlayer(
        spec,
        model_provider(spec, model_cfg, make_provider(model_cfg)),
        seed=SEED,
        window=window,
        relative=False,
        max_output=8192,
        exec_timeout_s=120,
    )


def _blob_seen(log: Log, after_seq: int, shas: dict[str, str | None]) -> set[str]:
    """The files whose content, as the drift wrote it, Codex was shown after the drift."""
    want = {s: p for p, s in shas.items() if s}
    seen = set()
    for r in log.of(ev.AgentRequest):
        if r.seq > after_seq:
            for item in json.loads(r.body)["input"]:
                rc, out = (
                    output(str(item.get("output", "")))
                    if item.get("type") == "function_call_output"
                    else (None, "")
                )
                if rc is not None and content_sha(out) in want:
                    seen.add(want[content_sha(out)])
    return seen


@pytest.mark.timeout(900)
def test_codex_plays_record_upgrade_in_docker_with_the_sim_behind_the_proxy(
    codex_installed, sandbox_cfg, docker_ready, tmp_path
):
    task = tasks.generate("record_upgrade", 0, steps=6)
    # the oracle (the sim that succeeds on every generated task in every arm): this test is about the
    # plumbing, so a step the sim's own mistakes would fail must not hide it
    player = _player(codex_installed)
    sandbox = create(
        sandbox_cfg, dict(task.files), "codex-e2e", {"ctxbench.test": "agents"}, mounts=player.mounts
    )
    try:
        from bench.sandbox.engine import _client

        attrs = _client().api.inspect_container(sandbox.container_id)
        interfaces = sandbox.exec("ls /sys/class/net").output.split()
        reason = _play(task, sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=True)
        repo_log = sandbox.git("log", "--format=%H")
    finally:
        sandbox.close()
    log = Log.from_path(tmp_path / "events.jsonl")
    turns, requests = log.of(ev.AgentTurn), log.of(ev.AgentRequest)
    passed = [s.step for s in log.of(ev.StepStatus) if s.status == "passed"]
    assert reason == "" and len(passed) == len(task.steps), (reason, [t.detail for t in turns])
    # no network: the container has none, only its loopback; the agent's install and the proxy's
    # folder (its socket, the forwarder) are mounted read-only
    assert attrs["HostConfig"]["NetworkMode"] == "none" and interfaces == ["lo"]
    mounts = {m["Destination"]: m["RW"] for m in attrs["Mounts"]}
    assert mounts == {"/work": True, "/judge": False, codex.AGENT_DIR: False, codex.PROXY_DIR: False}
    # every model request is on the record: as many as Codex's own rollout files count
    assert len(requests) == turns[-1].agent_count == sum(t.requests for t in turns) > 0
    assert {r.thread for r in requests} == {"main"} and {r.signal for r in requests} == {"turn"}
    assert not log.of(ev.ProcessKilled)  # the forwarder is ended by its turn; nothing else was left running
    rebuilt, problems = verify(tmp_path / "events.jsonl")
    assert problems == [] and rebuilt == len(requests)
    # step 2's first request carries step 1's turns: one session
    by_step: dict[str | None, list] = {}
    for call in log.calls:
        step = next((s.step for s in reversed(log.of(ev.StepStart)) if s.seq < call.context.seq), None)
        by_step.setdefault(step, []).append(call.messages)
    last_of_s01, first_of_s02 = by_step["s01"][-1], by_step["s02"][0]
    assert first_of_s02[: len(last_of_s01)] == last_of_s01 and len(first_of_s02) > len(last_of_s01)
    # a drift commit landed between steps, is the head of the repository at the next step, and
    # Codex was shown a file the drift wrote, as the drift wrote it
    drifts = log.of(ev.Drift)
    assert drifts and all(d.commit in repo_log for d in drifts)
    for d in drifts:  # the step after a drift (or the last of several before it) starts at its commit
        head = next(s for s in log.of(ev.StepStart) if s.seq > d.seq)
        assert head.repo_commit == d.commit or any(e.seq > d.seq and e.seq < head.seq for e in drifts)
    assert any(_blob_seen(log, d.seq, d.shas) for d in drifts)


@pytest.mark.timeout(1200)
def test_under_arm_compaction_codex_compacts_itself_and_goes_on(
    codex_installed, sandbox_cfg, docker_ready, tmp_path
):
    """arm=compaction: the proxy's window is 12,000 tokens above Codex's fixed overhead (measured from
    its first request), and Codex's own knobs are set from the arm (conf/agent/codex.yaml), so Codex
    compacts by itself before the proxy would refuse: its summary request (`request_kind:
    compaction`) is answered by the sim with a summary, recorded as a `compaction` event with its
    tokens before and after, and the next step is played from the summary; no context_overflow."""
    task = tasks.generate("record_upgrade", 0, steps=6)
    model_cfg = compose(["model=oracle"]).model
    player = codex.CodexPlayer(
        codex_installed,
        model_provider(codex_installed, model_cfg, make_provider(model_cfg)),
        seed=SEED,
        window=12000,
        relative=True,
        max_output=8192,
        exec_timeout_s=120,
        arm="compaction",
    )
    sandbox = create(
        sandbox_cfg, dict(task.files), "codex-compaction", {"ctxbench.test": "agents"}, mounts=player.mounts
    )
    try:
        reason = _play(task, sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    finally:
        sandbox.close()
    log = Log.from_path(tmp_path / "events.jsonl")
    turns, requests = log.of(ev.AgentTurn), log.of(ev.AgentRequest)
    passed = [s.step for s in log.of(ev.StepStatus) if s.status == "passed"]
    assert reason == "" and len(passed) == len(task.steps), (reason, [t.detail for t in turns])
    assert not log.of(ev.ContextOverflow)  # never refused: Codex compacted first
    # both numbers on the record: the arm's window and the overhead it is counted above
    overhead = requests[0].overhead or requests[1].overhead
    assert overhead > 0 and all(r.window == 12000 + r.overhead for r in requests[1:])
    assert (
        f"model_context_window={12000 + overhead} model_auto_compact_token_limit={overhead + 8400} "
        f"(overhead {overhead})" in turns[-1].detail
    )
    # Codex reads its knobs when it starts: its first turn, before its first request, counts no overhead
    assert "model_context_window=12000 model_auto_compact_token_limit=8400 (overhead 0)" in turns[0].detail
    # Codex's own compaction: its signal, the sim's summary, the event with tokens before and after
    asks = [r for r in requests if r.thread == "compaction"]
    assert asks and all(r.signal == "compaction" for r in asks)
    summaries = [c for c in log.of(ev.ModelCall) if c.purpose == "compaction"]
    assert len(summaries) == len(asks) and all("SUMMARY OF EARLIER" in c.content for c in summaries)
    compactions = log.of(ev.Compaction)
    assert len(compactions) == len(asks) and compactions[-1].usage["agent_count"] == len(asks)
    for c in compactions:
        assert 0 < c.tokens_after < c.tokens_before <= 12000 + overhead and c.summary
    # the step that follows a compaction is played, and passes, from the summary
    first = asks[0]
    after = next(r for r in requests if r.seq > first.seq and r.thread == "main")
    assert (
        "Another language model started to solve this problem" in after.body and after.tokens < first.tokens
    )
    assert any(s.seq > first.seq and s.status == "passed" for s in log.of(ev.StepStatus))
    rebuilt, problems = verify(tmp_path / "events.jsonl")
    assert problems == [] and rebuilt == len(requests)


def test_an_over_window_request_ends_codex_s_turn_as_context_overflow(
    codex_installed, sandbox_cfg, docker_ready, tmp_path
):
    player = _player(codex_installed, window=1000)  # below Codex's own ~5.5k tokens of overhead
    sandbox = create(
        sandbox_cfg,
        dict(tiny_task().files),
        "codex-window",
        {"ctxbench.test": "agents"},
        mounts=player.mounts,
    )
    try:
        reason = _play(tiny_task(), sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    finally:
        sandbox.close()
    assert reason == "context_overflow" and outcomes.outcome_class(reason) == outcomes.AGENT
    log = Log.from_path(tmp_path / "events.jsonl")
    assert log.of(ev.ContextOverflow) and all(r.status == 400 for r in log.of(ev.AgentReply))
    assert log.of(ev.AgentTurn)[0].exit_code not in (0, None)


def test_the_step_s_turn_limit_holds_for_codex_s_requests(
    codex_installed, sandbox_cfg, docker_ready, tmp_path
):
    """The referee counts every acting request at the proxy: past the step's turns the request is
    refused (400, on the record, never forwarded), Codex's turn ends, and the step is given up."""
    player = _player(codex_installed)
    task = tasks.generate("record_upgrade", 0, steps=6)
    sandbox = create(
        sandbox_cfg, dict(task.files), "codex-limit", {"ctxbench.test": "agents"}, mounts=player.mounts
    )
    try:
        reason = _play(
            task, sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=False, max_turns_per_step=1
        )
    finally:
        sandbox.close()
    assert reason == "step_failed"
    log = Log.from_path(tmp_path / "events.jsonl")
    assert len(log.calls) == 1  # one forwarded; the next was refused
    refused = [r for r in log.of(ev.AgentReply) if r.status == 400]
    assert refused and "ctxbench ended this turn" in refused[0].body


FAKES = {  # a stand-in for Codex's binary, as the sandbox runs it
    "exits": "echo 'codex: something broke' >&2; exit 1\n",
    "hangs": "sleep 600\n",
    "floods": "yes 'flooding the harness with output'\n",
    "garbles": "echo 'hello from the agent'\nexit 0\n",
}
EXPECTED = {"exits": "model_error", "hangs": "timeout", "floods": "model_error", "garbles": "model_error"}


def _fake_install(root: Path, spec: AgentSpec, body: str) -> None:
    assert spec.install is not None
    here = spec.cache_dir(root)
    exe = here / spec.install.bin
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n" + body)
    (here / STAMP).write_text("fake\n")
    meta = here / "node_modules" / spec.install.package / "package.json"  # the version check reads it
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"version": spec.version}))
    for p in [exe, *exe.parents]:
        if p == root.parent:
            break
        p.chmod(0o755)


@pytest.mark.parametrize("how", sorted(FAKES))
def test_a_codex_that_exits_hangs_floods_or_garbles_is_the_agents_failure(
    how, sandbox_cfg, docker_ready, tmp_path, monkeypatch
):
    spec = _spec(turn_timeout_s=5, output_limit_bytes=1 << 20)
    monkeypatch.setenv("CTXBENCH_AGENTS", str(tmp_path / "agents"))
    _fake_install(tmp_path / "agents", spec, FAKES[how])
    player = _player(spec, model="sim")
    task = tiny_task()
    sandbox = create(
        sandbox_cfg, dict(task.files), f"codex-{how}", {"ctxbench.test": "agents"}, mounts=player.mounts
    )
    started = time.monotonic()
    try:
        reason = _play(task, sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=False)
        left = sandbox.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' '").output
    finally:
        sandbox.close()
    assert reason == EXPECTED[how] and outcomes.outcome_class(reason) == outcomes.AGENT
    assert time.monotonic() - started < 120 and not any(
        p in left for p in (codex.AGENT_DIR, "forward.py", "sleep 600", "yes flooding")
    ), left  # reaped: nothing outlives its turn
    (turn,) = Log.from_path(tmp_path / "events.jsonl").of(ev.AgentTurn)
    assert turn.requests == 0 and turn.detail


def test_a_forwarder_that_cannot_reach_the_proxy_is_the_harness_s_failure(
    codex_installed, sandbox_cfg, docker_ready, tmp_path, monkeypatch
):
    monkeypatch.setattr(codex.ModelProxy, "start", lambda self: self)  # the proxy never listens
    player = _player(codex_installed)
    task = tiny_task()
    sandbox = create(
        sandbox_cfg, dict(task.files), "codex-noproxy", {"ctxbench.test": "agents"}, mounts=player.mounts
    )
    try:
        reason = _play(task, sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    finally:
        sandbox.close()
    assert reason == "harness_error" and outcomes.outcome_class(reason) != outcomes.AGENT
