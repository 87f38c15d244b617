"""Codex's own binary against the model proxy, on the host (no sandbox: the commands are the
scripted sim's, in a scratch folder): its Responses API requests, in its own shape, are served,
recorded and verified; `resume --last` carries the first instruction's turns into the next; and
each ctxbench call, sent as Codex's `exec_command` (several of one reply as one command) and run
by Codex, reads back through Codex's own rendering of the result as exactly what ctxbench's tool returns (bench/sim/dialects/codex.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bench.agents import codex
from bench.agents.install import cache_root
from bench.agents.spec import AgentSpec
from bench.config import ConfigError, compose, load
from bench.core.render import file_block
from bench.eventlog.verify import verify
from bench.eventlog.writer import EventLog
from bench.providers.scripted import ScriptedProvider
from bench.proxy.api import OpenAIResponses
from bench.proxy.server import ModelProxy
from bench.sim.dialects import DIALECTS, DialectProvider
from bench.sim.dialects.codex import DIALECT
from bench.sim.dialects.mini_bash import SUBMITTED
from ctxlog import events as ev
from ctxlog.reader import Log

SEED = 7101
CONTENT = "a = 1\nCTXBENCH_EOF\nb = '$(echo hi)'"  # a here-document delimiter inside, no final newline
STEP_ONE = [
    ("write_file", {"path": "m b.py", "content": CONTENT}),
    ("read_file", {"path": "m b.py"}),
    ("edit_file", {"path": "m b.py", "search": "a = 1", "replace": "a = 2"}),
    ("edit_file", {"path": "m b.py", "search": "zzz", "replace": "y"}),
    ("grep", {"pattern": "^b = ", "glob": "*.py"}),
    ("list_files", {}),
    (
        "run",
        {"command": "echo out; echo more; exit 3"},
    ),  # one stream: Codex orders stdout and stderr its own way
]
EDITED = CONTENT.replace("a = 1", "a = 2")
EXPECTED = [
    f"wrote m b.py\n{file_block('m b.py', CONTENT)}",
    file_block("m b.py", CONTENT),
    f"edited m b.py\n{file_block('m b.py', EDITED)}",
    "ERROR: search text not found in m b.py; re-read the file and retry",
    "m b.py:3:b = '$(echo hi)'",
    "m b.py",
    "exit=3\nout\nmore\n",
]


@pytest.fixture(scope="module")
def codex_exe() -> Path:
    d = OmegaConf.to_container(compose(["agent=codex"]).agent, resolve=True)
    spec = AgentSpec.from_dict(d)  # type: ignore[arg-type]
    try:
        return codex.installed(spec)
    except ConfigError as exc:
        if os.environ.get("CTXBENCH_REQUIRE_DOCKER") == "1":
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(f"{exc} ({cache_root()})")


def _config(home: Path, port: int) -> None:
    (home / ".codex").mkdir(parents=True)
    spec = AgentSpec.from_dict(OmegaConf.to_container(compose(["agent=codex"]).agent, resolve=True))  # type: ignore[arg-type]
    (home / ".codex" / "config.toml").write_text(
        codex._fill(spec.config_files[".codex/config.toml"], {"model_id": spec.model_id, "port": str(port)})
    )


def test_codex_s_requests_through_the_proxy_and_its_results_read_back_exactly(codex_exe, tmp_path):
    # replies of one call, and of several (one command: Codex would run separate calls concurrently)
    replies = [STEP_ONE[:2], STEP_ONE[2:3], STEP_ONE[3:4], STEP_ONE[4:]]
    script = [[{"name": n, "args": a} for n, a in reply] for reply in replies] + [
        [{"name": "submit_step", "args": {"notes": "one"}}],
        [{"name": "submit_step", "args": {"notes": "two"}}],
    ]
    provider = DialectProvider(ScriptedProvider(script, when_done="stop"), DIALECTS.load("codex"))
    log = EventLog(tmp_path / "events.jsonl")
    log.append(
        ev.TrialStart(
            trial_id="t",
            task_id="x",
            strategy="agent",
            arm="baseline",
            seed=SEED,
            max_output=4096,
            schema=ev.SCHEMA,
        )
    )
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "CTXBENCH_PROXY_KEY": "k",
    }
    ends = []
    with ModelProxy(provider, log, seed=SEED) as proxy:
        _config(home, int(proxy.url.rsplit(":", 1)[1]))
        for argv in (
            ["exec", "--json", "--skip-git-repo-check", "step one"],
            ["exec", "--json", "--skip-git-repo-check", "resume", "--last", "step two"],
        ):
            done = subprocess.run(
                [str(codex_exe), *argv],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=env,
                cwd=work,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr.decode()[-500:]
            ends.append(
                [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
            )
    log.close()
    assert (work / "m b.py").read_text() == EDITED
    # Codex ended each turn on the sim's lone submit, its last message the submission
    for end, notes in zip(ends, ("one", "two"), strict=True):
        assert end[-1]["type"] == "turn.completed"
        last = [e["item"]["text"] for e in end if e.get("item", {}).get("type") == "agent_message"][-1]
        assert json.loads(last.split(" ", 1)[1]) == {"notes": notes}
    rebuilt, problems = verify(tmp_path / "events.jsonl")
    records = Log.from_path(tmp_path / "events.jsonl")
    requests = records.of(ev.AgentRequest)
    assert problems == [] and rebuilt == len(requests) == len(script)
    assert {(r.api, r.thread, r.signal) for r in requests} == {("openai_responses", "main", "turn")}
    assert all(json.loads(r.body)["tools"][0]["name"] == "exec_command" for r in requests)
    # the last request: both instructions' turns, one session; read back, ctxbench's own results
    own = DIALECT.to_ctxbench(OpenAIResponses.decode(json.loads(requests[-1].body)).messages)
    users = [m.content for m in own if m.role == "user"]
    assert users[-2:] == ["step one", "step two"]
    results = [m.content for m in own if m.role == "tool"]
    assert results == [*EXPECTED, SUBMITTED]
    assert [c.name for m in own if m.role == "assistant" for c in m.tool_calls] == [
        n for n, _ in STEP_ONE
    ] + ["submit_step"]


def test_the_codex_player_from_its_config(codex_exe):
    """What the runner gets for agent=codex (bench/agents/players.py): the sim speaking Codex's
    dialect, the arm's window mode, and the two read-only mounts its sandbox is made with (its
    install; the proxy's folder, holding the forwarder); its config file filled in for the turn."""
    from types import SimpleNamespace

    from bench.agents import players
    from bench.providers import make_provider
    from bench.sim.dialects import DialectProvider

    tcfg = load(compose(["agent=codex", "arm=compaction"]))
    parts = SimpleNamespace(
        provider=make_provider(tcfg.model),
        window=12000,
        max_output=4096,
        sandbox=SimpleNamespace(exec_timeout_s=30.0),
    )
    player = players.make_player(tcfg, parts, 1)
    assert isinstance(player, codex.CodexPlayer) and isinstance(player.provider, DialectProvider)
    assert (player.window, player.relative) == (12000, True)
    (install, folder) = player.mounts
    assert (install.target, folder.target) == (codex.AGENT_DIR, codex.PROXY_DIR)
    assert codex_exe.is_relative_to(install.source)
    assert (folder.source / "forward.py").read_text() == codex.FORWARDER.read_text()
    env = player._env("do the step")
    assert (
        env["CTXBENCH_INSTRUCTION"] == "do the step"
        and 'base_url = "http://127.0.0.1:7878/v1"' in env["CTXBENCH_FILE_0"]
        and 'model = "ctxbench-sim"' in env["CTXBENCH_FILE_0"]
    )
    assert f"{codex.AGENT_DIR}/node_modules/" in player._script(
        True, {}
    ) and " resume --last " in player._script(False, {})
    # its compaction knobs, from the arm (conf/agent/codex.yaml): before its first request its overhead
    # counts as 0; after, as the proxy measured it; `exec`'s own options, before `resume`
    player.proxy = SimpleNamespace(overhead=None)
    assert player._knobs() == {"model_context_window": 12000, "model_auto_compact_token_limit": 8400}
    player.proxy.overhead = 5373
    knobs = player._knobs()
    assert knobs == {"model_context_window": 17373, "model_auto_compact_token_limit": 13773}
    assert (
        " exec -c model_context_window=17373 -c model_auto_compact_token_limit=13773 --json "
        in player._script(False, knobs)
        and " --skip-git-repo-check resume --last " in player._script(False, knobs)
    )
    baseline = players.make_player(load(compose(["agent=codex", "arm=baseline"])), parts, 1)
    baseline.proxy = SimpleNamespace(overhead=5373)
    assert baseline._knobs() == {} and baseline.relative is False


def test_a_turn_s_output_read_back():
    """What the player reads of a turn: Codex's JSON events, then the turn script's own lines."""
    from bench.sandbox.base import ExecResult

    events = [
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "first"}},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "done: kept x"}},
        {"type": "turn.completed", "usage": {}},
    ]
    body = "WARNING: a line of Codex's stderr\n" + "".join(json.dumps(e) + "\n" for e in events)
    tail = "ctxbench-exit 0\n\nctxbench-bytes 412\nctxbench-rollout 5\nctxbench-compacted 2\n"
    end = codex._read(ExecResult(0, body + tail, 1.0, False))
    assert (end["exit"], end["bytes"], end["rollout"], end["completed"], end["message"]) == (
        0,
        412,
        5,
        True,
        "done: kept x",
    )
    assert end["compacted"] == 2
    failed = codex._read(
        ExecResult(
            0,
            '{"type":"turn.failed","error":{"message":"stream disconnected"}}\n'
            "ctxbench-exit 1\n\nctxbench-bytes 70\nctxbench-rollout 0\n",
            1.0,
            False,
        )
    )
    assert (failed["exit"], failed["completed"], failed["detail"]) == (1, False, "stream disconnected")
    # the agent printing the script's own lines first changes nothing: the script's come last
    forged = codex._read(ExecResult(0, "ctxbench-exit 0\nctxbench-rollout 99\n" + body + tail, 1.0, False))
    assert (forged["exit"], forged["rollout"]) == (0, 5)
    assert codex._read(ExecResult(137, "", 5.0, True))["detail"] == "no output (exit 137, timed out)"
