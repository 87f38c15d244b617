"""bench.core.registry: every plug-in kind registers the same way, imports lazily, and a bad
choice fails with one line naming the key, the bad value and the allowed ones."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench.core.registry import Registry, UnknownChoice
from bench.providers import PROVIDERS
from bench.sandbox import SANDBOXES
from strategies import STRATEGIES
from tasks import FAMILIES

ALL = {
    "strategy.name": STRATEGIES,
    "model.provider": PROVIDERS,
    "sandbox.kind": SANDBOXES,
    "task.family": FAMILIES,
}


@pytest.mark.parametrize("key", ALL)
def test_a_bad_choice_is_one_line_naming_key_value_and_choices(key):
    registry = ALL[key]
    with pytest.raises(UnknownChoice) as err:
        registry.load("nope")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{key}='nope' is not one of ")
    assert all(name in message for name in registry)


@pytest.mark.parametrize("key", ALL)
def test_every_entry_loads(key):
    for name in ALL[key]:
        assert callable(ALL[key].load(name))


def test_a_malformed_entry_fails_when_declared():
    with pytest.raises(ValueError, match="'x.y' is not 'module:attribute'"):
        Registry("thing", {"a": "x.y"})


def test_non_string_choices_are_refused():
    reg = Registry("thing", {"a": "json:dumps"})
    for bad in (None, 3, ["a"]):
        with pytest.raises(UnknownChoice, match="thing="):
            reg.check(bad)
    assert reg.load("a")({"k": 1}) == '{"k": 1}' and list(reg) == ["a"] and len(reg) == 1


def test_nothing_is_imported_before_it_is_chosen():
    code = (
        "import sys, bench.providers, bench.sandbox, strategies, tasks\n"
        "chosen = ['bench.providers.anthropic', 'bench.providers.openai', 'bench.sim.provider',\n"
        "          'bench.sandbox.docker', 'bench.sandbox.local', 'strategies.ledger',\n"
        "          'tasks.config_rename', 'anthropic', 'openai', 'docker']\n"
        "print(sorted(m for m in chosen if m in sys.modules))\n"
        "bench.providers.PROVIDERS.load('sim'); tasks.FAMILIES.load('config_rename')\n"
        "print(sorted(m for m in chosen if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    before, after = out.stdout.strip().splitlines()
    assert before == "[]"
    assert "'bench.sim.provider'" in after and "anthropic'" not in after and "'docker'" not in after
