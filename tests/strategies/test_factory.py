"""`make_strategy` from the composed `conf/strategy/*.yaml`, every option, and bad configs."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bench.config import compose
from strategies import STRATEGIES, make_strategy
from strategies._common import DEFAULT_COMPACTION_PROMPT
from strategies.base import TranscriptOnly
from strategies.compaction import CompactionStrategy
from strategies.ledger import LedgerStrategy
from strategies.masking import MaskingStrategy
from strategies.raw import RawStrategy
from strategies.subagent import SubagentStrategy

CONF = Path(__file__).resolve().parents[2] / "conf" / "strategy"
PROMPT = "Summarise the work so far.\n[compaction-request]\nKeep every [inv:..] line."


def load(name: str, **overrides: object):
    """The `strategy` group as the real config composes it, with `overrides` on top."""
    composed = OmegaConf.to_container(compose([f"strategy={name}"]).strategy)
    assert isinstance(composed, dict)
    return {**composed, **overrides}


def test_every_strategy_has_a_config_file_and_builds_from_it():
    assert sorted(p.stem for p in CONF.glob("*.yaml")) == sorted(STRATEGIES)
    classes = {
        "raw": RawStrategy,
        "compaction": CompactionStrategy,
        "ledger": LedgerStrategy,
        "subagent": SubagentStrategy,
        "masking": MaskingStrategy,
    }
    for name, cls in classes.items():
        s = make_strategy(load(name))
        assert isinstance(s, cls) and s.name == name
    assert (RawStrategy.requires_handoff, CompactionStrategy.requires_handoff) == (False, False)
    assert (LedgerStrategy.requires_handoff, SubagentStrategy.requires_handoff) == (True, True)
    assert SubagentStrategy.fresh_session_per_step and not LedgerStrategy.fresh_session_per_step


def test_every_strategy_states_every_hook_the_loop_reads():
    """No hook is read with a default: each strategy says it (strategies/base.py Strategy)."""
    stated = {
        name: (STRATEGIES.load(name).fresh_session_per_step, make_strategy(load(name)).invariants_from)
        for name in STRATEGIES
    }
    assert stated == {
        "raw": (False, "model"),
        "compaction": (False, "model"),
        "masking": (False, "model"),
        "ledger": (False, "model"),
        "subagent": (True, "model"),
    }


def test_a_strategy_that_does_not_state_a_hook_fails_in_one_line(monkeypatch):
    monkeypatch.delattr(TranscriptOnly, "fresh_session_per_step")  # where raw states it
    with pytest.raises(
        ValueError, match=r"^strategy.name='raw': RawStrategy does not state fresh_session_per_step;"
    ):
        make_strategy(load("raw"))


def test_yaml_defaults_match_the_code_defaults():
    for name in STRATEGIES:
        s = make_strategy(load(name))
        assert s.config == type(s.config)(), name  # type: ignore[attr-defined]


def test_compaction_options():
    s = make_strategy(
        load("compaction", threshold=0.5, force_at_turns=[3, 9], keep_recent_turns=2, prompt=PROMPT)
    )
    assert isinstance(s, CompactionStrategy)
    assert (s.config.threshold, s.config.force_at_turns, s.config.keep_recent_turns) == (0.5, (3, 9), 2)
    assert s.config.prompt == PROMPT
    assert make_strategy(load("compaction")).config.prompt == DEFAULT_COMPACTION_PROMPT  # type: ignore[attr-defined]
    assert make_strategy(load("compaction", keep_recent_turns=0)).config.keep_recent_turns == 0  # type: ignore[attr-defined]


def test_ledger_and_subagent_options():
    s = make_strategy(
        load(
            "ledger",
            files_budget_tokens=1000,
            files_budget_fraction=0.2,
            notes_cap_chars=80,
            threshold=0.6,
            keep_recent_turns=0,
            prompt=PROMPT,
        )
    )
    assert isinstance(s, LedgerStrategy)
    c = s.config
    assert (
        c.files_budget_tokens,
        c.files_budget_fraction,
        c.notes_cap_chars,
        c.threshold,
        c.keep_recent_turns,
        c.prompt,
    ) == (1000, 0.2, 80, 0.6, 0, PROMPT)
    sub = make_strategy(load("subagent", notes_cap_chars=60))
    assert isinstance(sub, SubagentStrategy) and sub.config.notes_cap_chars == 60


@pytest.mark.parametrize("name", ["ledger", "subagent"])
def test_invariants_from_is_model_by_default_and_harness_a_labelled_variant(name):
    # The default must not hand out the truth: harness-written invariants are a channel, on request.
    s = make_strategy(load(name))
    assert s.invariants_from == "model" and s.channels["harness_invariants"] is False  # type: ignore[attr-defined]
    h = make_strategy(load(name, invariants_from="harness"))
    assert h.invariants_from == "harness" and h.channels["harness_invariants"] is True  # type: ignore[attr-defined]
    with pytest.raises(
        ValueError, match=rf"invariants_from.*conf/strategy/{name}\.yaml|conf/strategy/{name}\.yaml"
    ):
        make_strategy(load(name, invariants_from="summary"))


def test_every_strategy_lists_its_channels_from_its_config():
    assert {n: make_strategy(load(n)).channels for n in ("raw", "compaction", "masking")} == {
        "raw": {},
        "compaction": {},
        "masking": {},
    }
    assert make_strategy(load("ledger")).channels == {
        "files": True,
        "tree": True,
        "drift_note": True,
        "harness_invariants": False,
    }
    assert make_strategy(load("ledger", tree=False, drift_note=False, files_budget_tokens=0)).channels == {
        "files": False,
        "tree": False,
        "drift_note": False,
        "harness_invariants": False,
    }
    assert make_strategy(load("subagent", drift_note=False)).channels == {
        "drift_note": False,
        "harness_invariants": False,
    }


def test_unknown_strategy_lists_the_four():
    with pytest.raises(ValueError) as e:
        make_strategy({"name": "memory"})
    for name in ("raw", "compaction", "ledger", "subagent"):
        assert name in str(e.value)


def test_unknown_key_names_key_and_file():
    with pytest.raises(
        ValueError,
        match=r"^strategy\.treshold: unknown key 'treshold' in conf/strategy/compaction"
        r"\.yaml or the command line; known keys: force_at_turns, keep_recent_turns",
    ):
        make_strategy(load("compaction", treshold=0.5))
    with pytest.raises(ValueError, match=r"'threshold'.*conf/strategy/raw\.yaml"):
        make_strategy({"name": "raw", "threshold": 0.5})


@pytest.mark.parametrize(
    "name, key, value",
    [
        ("compaction", "threshold", 0.0),
        ("compaction", "threshold", 1.5),
        ("compaction", "keep_recent_turns", 3),
        ("compaction", "force_at_turns", [-1]),
        ("compaction", "prompt", "Summarise, mentioning [compaction-request] inline only."),
        ("ledger", "prompt", "no marker at all"),
        ("ledger", "files_budget_tokens", -1),
        ("ledger", "files_budget_fraction", 0.0),
        ("ledger", "notes_cap_chars", 3),
        ("ledger", "threshold", 2.0),
        ("ledger", "keep_recent_turns", -1),
        ("subagent", "notes_cap_chars", 0),
        ("subagent", "invariants_from", "both"),
        ("ledger", "tree", "yes"),
        ("ledger", "drift_note", 1),
        ("subagent", "drift_note", "off"),
        ("masking", "keep_recent_turns", -2),
    ],
)
def test_bad_values_are_rejected_in_one_line_naming_the_key_and_the_file(name, key, value):
    with pytest.raises(
        ValueError, match=rf"^strategy\.{key}\b.*got .*; fix it in conf/strategy/{name}\.yaml"
    ) as e:
        make_strategy(load(name, **{key: value}))
    assert "\n" not in str(e.value)


def test_plain_dict_config_works_too():
    s = make_strategy({"name": "compaction", "force_at_turns": (4,), "prompt": None})
    assert s.config.force_at_turns == (4,)  # type: ignore[attr-defined]
