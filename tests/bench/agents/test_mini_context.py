"""ctxbench's strategies over mini-swe-agent's message list (bench/agents/mini_context.py): what the
model sees is the strategy's view of mini's list (mini's own prefix, its unchanged messages byte
for byte), mini keeps its whole list, every request verifies, and the choice is the trial's level.
`agent.context=own` (the default) and `proxy_rewrite: none` leave every config hash as it was."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bench.agents import mini
from bench.agents.mini_context import PREFIX, MiniContext, to_messages
from bench.agents.players import validate
from bench.agents.spec import AgentSpec
from bench.config import ConfigError, compose, config_hash, load
from bench.core.tokens import count_messages
from bench.eventlog.verify import verify
from bench.eventlog.writer import EventLog
from bench.providers.scripted import ScriptedProvider
from bench.sim.dialects import DIALECTS, DialectProvider
from ctxlog import events as ev
from ctxlog.reader import Log
from strategies import make_strategy
from strategies.base import StepHead
from tests.bench.agents.test_mini import box, mini_installed  # noqa: F401 - fixtures
from tests.bench.trial.conftest import CALC, tiny_task
from tests.helpers.agents import SEED, agent_spec, play

HEAD = StepHead(tree="(clean)", files=(), repo_commit="c0")


def _wire(turns: int) -> list[dict]:
    """mini's list as its driver sends it: system, the first instruction, then its turns."""
    msgs: list[dict] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Please solve this issue: [task:tiny/0] ..."},
    ]
    for k in range(turns):
        msgs += [
            {
                "role": "assistant",
                "content": f"turn {k}",
                "function_call": None,
                "tool_calls": [
                    {
                        "id": f"c{k}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{k}", "content": f'{{"returncode": 0, "output": "out {k}"}}'},
        ]
    return msgs


def _context(strategy: dict, window: int = 200_000) -> MiniContext:
    ctx = MiniContext(make_strategy(strategy), tiny_task(), window, 1000)
    ctx.head = HEAD
    return ctx


def test_masking_view_keeps_minis_prefix_and_unchanged_messages_as_mini_wrote_them():
    wire = _wire(3)
    ctx = _context({"name": "masking", "keep_recent_turns": 1})
    state = ctx.state(wire, 3, [])
    view = ctx.view(wire, ctx.strategy.build(state), state)
    assert view[:PREFIX] == wire[:PREFIX] and len(view) == len(wire)
    assert [m["content"] for m in view if m["role"] == "tool"] == [
        "[bash output omitted: 1 lines]",
        "[bash output omitted: 1 lines]",
        wire[-1]["content"],
    ]
    assert all(v is w for v, w in zip(view, wire, strict=True) if v["role"] != "tool")  # mini's own dicts
    assert wire[3]["content"] == '{"returncode": 0, "output": "out 0"}'  # mini's list is untouched


def test_raw_drops_the_oldest_turns_past_the_window_and_keeps_the_step_notice():
    wire = _wire(8)
    # the harness's next instruction
    wire.insert(8, {"role": "user", "content": "CURRENT STEP [step:s02] ..."})
    roomy = _context({"name": "raw"})
    whole = roomy.state(wire, 9, [])
    extra = 200_000 - whole.window  # what mini's prefix takes beyond ctxbench's
    ctx = _context({"name": "raw"}, window=1000 + extra + int(0.7 * roomy.strategy.build(whole).tokens))
    ctx.step_start = 8 - PREFIX
    state = ctx.state(wire, 9, [])
    built = ctx.strategy.build(state)
    view = ctx.view(wire, built, state)
    assert built.dropped > 0 and view[:PREFIX] == wire[:PREFIX] and len(view) < len(wire)
    assert wire[8] in view and view[-1] is wire[-1]
    assert count_messages(to_messages(view)) <= ctx.window - 1000  # what the model gets fits the budget


def _two_steps():
    task = tiny_task()
    second = task.steps[0].__class__(**{**task.steps[0].__dict__, "id": "s02", "title": "Keep calc.add"})
    return task.__class__(**{**task.__dict__, "steps": (task.steps[0], second)})


SCRIPT = [
    [{"name": "list_files", "args": {}}],
    [{"name": "write_file", "args": {"path": "calc.py", "content": CALC}}],
    [{"name": "submit_step", "args": {"notes": "add() stays a plain sum", "invariants": []}}],
    [{"name": "read_file", "args": {"path": "calc.py"}}],
    [{"name": "submit_step", "args": {"notes": "nothing to change", "invariants": []}}],
]


def _mini_with(spec: AgentSpec, strategy: dict, sandbox, tmp_path: Path) -> Log:
    provider = DialectProvider(ScriptedProvider(SCRIPT, when_done="stop"), DIALECTS.load("mini_bash"))
    player = mini.MiniPlayer(
        spec,
        provider,
        seed=SEED,
        window=0,
        relative=False,
        max_output=1000,
        exec_timeout_s=10,
        strategy=make_strategy(strategy),
    )
    reason = play(_two_steps(), sandbox, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    log = Log.from_path(tmp_path / "events.jsonl")
    assert reason == "", [t.detail for t in log.of(ev.AgentTurn)]
    rebuilt, problems = verify(tmp_path / "events.jsonl")
    assert problems == [] and rebuilt == len(log.of(ev.AgentRequest)) == len(SCRIPT)
    return log


def test_mini_under_masking_the_model_sees_placeholders_mini_keeps_its_list(mini_installed, box, tmp_path):  # noqa: F811 - fixtures
    log = _mini_with(mini_installed, {"name": "masking", "keep_recent_turns": 1}, box, tmp_path)
    last = json.loads(log.of(ev.AgentRequest)[-1].body)["messages"]
    assert sum(str(m.get("content")).startswith("[bash output omitted") for m in last) >= 2
    # mini's prompt
    assert last[0]["content"] == json.loads(log.of(ev.AgentRequest)[0].body)["messages"][0]["content"]
    assert log.of(ev.AgentTurn)[-1].agent_count == len(SCRIPT)


def test_mini_under_subagent_step_two_sees_the_brief_not_step_ones_turns(mini_installed, box, tmp_path):  # noqa: F811 - fixtures
    log = _mini_with(mini_installed, {"name": "subagent"}, box, tmp_path)
    first_of_s02 = json.loads(log.of(ev.AgentRequest)[3].body)["messages"]
    text = "\n".join(str(m.get("content")) for m in first_of_s02)
    assert "SUBAGENT BRIEF for [step:s02]" in text and "add() stays a plain sum" in text  # its hand-off
    assert not any(m.get("tool_calls") for m in first_of_s02)  # none of step 1's turns
    assert log.of(ev.StepStart)[1].new_session


def test_context_strategy_is_refused_for_an_agent_whose_list_is_not_ours(monkeypatch):
    monkeypatch.setattr("bench.agents.install.installed", lambda spec: Path(sys.executable))
    cfg = load(
        compose(
            ["agent=mini_swe_agent", "agent.context=strategy", "agent.player=bench.agents.players:EXTERNAL"]
        )
    )
    with pytest.raises(ConfigError) as err:
        validate(cfg)
    assert "message list lives in its own process" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=r"^agent.context: Input should be 'own' or 'strategy', got 'mine'"):
        AgentSpec.from_dict(
            {**OmegaConf.to_container(compose(["agent=mini_swe_agent"]).agent), "context": "mine"}
        )


def test_the_defaults_keep_the_hash_and_the_switches_are_the_level():
    plain = load(compose(["agent=mini_swe_agent"]))
    without = {
        **plain.resolved,
        "agent": {k: v for k, v in plain.resolved["agent"].items() if k not in ("context", "proxy_rewrite")},
    }
    assert plain.config_hash == config_hash(without) and plain.level == "mini_swe_agent"
    masked = load(compose(["agent=mini_swe_agent", "agent.context=strategy", "strategy=masking"]))
    proxied = load(
        compose(
            [
                "agent=mini_swe_agent",
                "agent.proxy_rewrite.name=trim",
                "agent.proxy_rewrite.budget_tokens=9000",
            ]
        )
    )
    assert len({plain.config_hash, masked.config_hash, proxied.config_hash}) == 3
    assert (masked.level, proxied.level) == ("mini_swe_agent+masking", "mini_swe_agent+proxy_trim")
    spec = agent_spec("mini_swe_agent")
    assert (spec.context, spec.proxy_rewrite) == ("own", None)
