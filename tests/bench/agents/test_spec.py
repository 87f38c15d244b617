"""The `agent` config group: every option composes and validates; `agent` left out and agent=own
give the same trial (config hash); bad input is one line naming the key; an agent not installed
or at another version says how to install it."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from bench.agents import install as I
from bench.agents.spec import AgentSpec
from bench.config import ConfigError, compose, load


def _spec(name: str) -> AgentSpec:
    return AgentSpec.from_dict(OmegaConf.to_container(compose([f"agent={name}"]).agent, resolve=True))


@pytest.mark.parametrize("name", I.names())
def test_every_agent_option_composes_and_validates(name):
    spec = _spec(name)
    assert spec.name == name
    if not spec.own:
        assert spec.install is not None and spec.version and spec.wire_api
        assert spec.cache_dir(I.cache_root()).name == f"{name}-{spec.version}"


def test_agent_left_out_or_own_is_the_same_trial():
    plain, own = load(compose(["task=record_upgrade"])), load(compose(["task=record_upgrade", "agent=own"]))
    assert "agent" not in plain.resolved and plain.agent is None
    assert own.agent == {"name": "own"} and own.config_hash == plain.config_hash
    other = load(compose(["task=record_upgrade", "agent=mini_swe_agent"]))
    assert other.config_hash != plain.config_hash


@pytest.mark.parametrize(
    ("patch", "words"),
    [
        ({"colour": "red"}, "agent.colour: unknown key 'colour' in conf/agent/mini_swe_agent.yaml"),
        ({"version": "latest"}, "agent.version: pin the agent to an exact version, e.g. 2.4.6, got 'latest'"),
        (
            {"wire_api": "grpc"},
            "agent.wire_api: Input should be 'anthropic', 'openai_chat' or 'openai_responses'",
        ),
        (
            {"install": {"registry": "cargo", "package": "x", "bin": "y"}},
            "agent.install.registry: Input should be 'pypi' or 'npm', got 'cargo'",
        ),
        (
            {"install": {"registry": "npm", "package": "x"}},
            "agent.install.bin: missing; set it in conf/agent/",
        ),
        ({"model_id": "gpt-6"}, "agent.model_id='gpt-6' is not an id mini_swe_agent accepts"),
        (
            {"arms": {"compaction": {"window": "half"}}},
            "agent.arms.compaction.window: Input should be 'absolute' or 'relative', got 'half'",
        ),
        (
            {"limits": {"turn_timeout_s": 0}},
            "agent.limits.turn_timeout_s: Input should be greater than 0, got 0",
        ),
        (
            {"limits": {"output_limit_bytes": "1MB"}},
            "agent.limits.output_limit_bytes: Input should be a valid integer",
        ),
        ({"limits": {"turn_s": 5}}, "agent.limits.turn_s: unknown key 'turn_s'"),
        ({"env": {"DEBUG": 1}}, "agent.env.DEBUG: Input should be a valid string, got 1"),
        ({"runs": "cloud"}, "agent.runs: Input should be 'host' or 'sandbox', got 'cloud'"),
        (
            {"arms": {"compaction": {"knobs": {"max_tokens": 0.5}}}},
            "agent.arms.compaction.knobs.max_tokens: not one of mini_swe_agent's compaction knobs (none)",
        ),
        (
            {"compaction": {"k": "what it does"}, "arms": {"compaction": {"knobs": {"k": 1.5}}}},
            "agent.arms.compaction.knobs.k: Input should be less than or equal to 1",
        ),
    ],
)
def test_bad_agent_config_is_one_line(patch, words):
    d = {**OmegaConf.to_container(compose(["agent=mini_swe_agent"]).agent, resolve=True), **patch}
    with pytest.raises(ConfigError) as exc:
        AgentSpec.from_dict(d)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_unknown_agent_is_one_line():
    with pytest.raises(
        ConfigError, match=r"agent='aider' is not an agent of conf/agent/; choose one of .*mini_swe_agent"
    ):
        I.spec_named("aider")


def test_not_installed_or_another_version_says_how_to_install(tmp_path):
    spec = _spec("mini_swe_agent")
    with pytest.raises(
        ConfigError,
        match=r"mini_swe_agent 2\.4\.6 is not installed .*scripts/ensure_agents.sh mini_swe_agent",
    ):
        I.installed(spec, tmp_path)
    old = tmp_path / "mini_swe_agent-2.4.5"
    old.mkdir()
    (old / I.STAMP).write_text("pypi mini-swe-agent 2.4.5\n")
    with pytest.raises(ConfigError, match=r"the cache has mini_swe_agent-2\.4\.5, not 2\.4\.6"):
        I.installed(spec, tmp_path)
    here = spec.cache_dir(tmp_path)
    here.mkdir()
    (here / I.STAMP).write_text("x")
    with pytest.raises(ConfigError, match="is missing from its install"):
        I.installed(spec, tmp_path)
    (here / "venv" / "bin").mkdir(parents=True)
    (here / "venv" / "bin" / "python").write_text("")
    with pytest.raises(ConfigError, match=r"holds mini-swe-agent \(none\), not 2\.4\.6"):
        I.installed(spec, tmp_path)
    (here / "venv" / "lib" / "python3.11" / "site-packages" / "mini_swe_agent-2.4.6.dist-info").mkdir(
        parents=True
    )
    assert I.installed(spec, tmp_path) == here / "venv" / "bin" / "python"
    assert I.install(spec, tmp_path) == here  # stamped: nothing happens


def test_the_player_of_each_agent(monkeypatch):
    """What the runner's hook gets (bench/agents/players.py): None for ctxbench's own loop, mini's
    player with the sim speaking its dialect, one line for an agent without a player yet."""
    from types import SimpleNamespace

    from bench.agents import players
    from bench.agents.mini import MiniPlayer
    from bench.providers import make_provider
    from bench.sim.dialects import DialectProvider

    def parts(tcfg):
        return SimpleNamespace(
            provider=make_provider(tcfg.model),
            window=12000,
            max_output=4096,
            sandbox=SimpleNamespace(exec_timeout_s=30.0),
        )

    own = load(compose(["agent=own"]))
    assert players.make_player(own, parts(own), 1) is None
    tcfg = load(compose(["agent=mini_swe_agent", "arm=compaction"]))
    player = players.make_player(tcfg, parts(tcfg), 1)
    assert isinstance(player, MiniPlayer) and isinstance(player.provider, DialectProvider)
    assert (player.window, player.relative) == (12000, False)
    real = load(compose(["agent=mini_swe_agent", "model=openai"]))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert not isinstance(players.model_provider(player.spec, real.model, object()), DialectProvider)
    cc = load(compose(["agent=claude_code", "agent.player=''"]))  # every shipped agent plays now
    with pytest.raises(ConfigError, match="agent=claude_code has no player yet"):
        players.make_player(cc, parts(cc), 1)


def test_every_agent_knob_has_a_one_line_doc_and_a_key_left_out_takes_its_default():
    from bench.agents.spec import AgentKnobs, AgentLimits, ArmEntry, Install

    for schema in (AgentKnobs, Install, ArmEntry, AgentLimits):
        for key, field in schema.model_fields.items():
            assert field.description and "\n" not in field.description, f"{schema.__name__}.{key}"
    d = OmegaConf.to_container(compose(["agent=codex"]).agent, resolve=True)
    assert isinstance(d, dict)
    del d["limits"], d["runs"]
    spec = AgentSpec.from_dict(d)
    assert (spec.limits.turn_timeout_s, spec.limits.output_limit_bytes, spec.runs) == (300, 1000000, "host")
    assert spec.limits == _spec("codex").limits  # what codex.yaml states is the schema's default


def test_an_agents_compaction_knobs_are_its_overhead_plus_its_share_of_the_arms_window():
    """conf/agent/codex.yaml: under a window arm each knob is Codex's overhead plus its fraction of
    the arm's window (what `codex exec -c` is given); under an arm without them, or no window, none."""
    spec = AgentSpec.from_dict(OmegaConf.to_container(compose(["agent=codex"]).agent, resolve=True))
    assert spec.knobs("compaction", 12000, 5373) == {
        "model_context_window": 17373,
        "model_auto_compact_token_limit": 5373 + 8400,
    }
    assert spec.knobs("drift_compaction", 12000, 0) == {
        "model_context_window": 12000,
        "model_auto_compact_token_limit": 8400,
    }
    assert spec.knobs("baseline", 12000, 5373) == {} and spec.knobs("compaction", 0, 5373) == {}
    assert set(spec.compaction) >= set(spec.arm("compaction")["knobs"])
