"""Bad input about an agent is one line before anything runs (`python -m bench`'s preflight,
exit 2); an agent that misbehaves while it plays is the agent's own failure by the outcome table
(docs/design.md §9), recorded as any trial, never booked as infrastructure.

One line: an unknown agent, an agent not installed, installed at another version, an install
changed in place (its package metadata says another version), a model id the agent does not
accept, an agent with no player. The agent's failure: a driver that exits 1, hangs, prints
100 MB on its protocol stream or on its stderr, through the whole trial (runner, MLflow)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import preflight
from bench.agents import mini
from bench.agents.install import STAMP
from bench.core import outcomes
from tests.bench.agents.test_replay import _records, _trial

VERSION = "2.4.6"


def _cache(root: Path, version: str = VERSION, recorded: str = VERSION) -> Path:
    """A mini install as scripts/ensure_agents.sh leaves it: its venv's python, its dist-info, the stamp."""
    here = root / f"mini_swe_agent-{version}"
    (here / "venv" / "bin").mkdir(parents=True)
    (here / "venv" / "bin" / "python").symlink_to(sys.executable)
    (here / "venv" / "lib" / "python3.11" / "site-packages" / f"mini_swe_agent-{recorded}.dist-info").mkdir(
        parents=True
    )
    (here / STAMP).write_text(f"pypi mini-swe-agent {version}\n")
    return here


def _bad(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        preflight.check(["sandbox=local", *argv])
    err = capsys.readouterr().err
    ours = [line for line in err.splitlines() if line.startswith("ctxbench")]  # not MLflow's own logging
    assert exit_.value.code == preflight.EXIT_BAD_INPUT and len(ours) == 1, err
    assert ours[0].startswith("ctxbench: bad input: ")
    return ours[0]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "agents"
    root.mkdir()
    monkeypatch.setenv("CTXBENCH_AGENTS", str(root))
    monkeypatch.setenv("CTXBENCH_RESULTS", str(tmp_path / "results"))
    return root


def test_an_unknown_agent(capsys, cache):
    err = _bad(capsys, "agent=aider")
    assert "Could not find 'agent/aider'" in err and "mini_swe_agent" in err  # and the agents there are


def test_an_agent_not_installed(capsys, cache):
    assert (
        f"agent mini_swe_agent {VERSION} is not installed in {cache}; run scripts/ensure_agents.sh mini_swe_agent"
        in _bad(capsys, "agent=mini_swe_agent")
    )


def test_an_agent_at_another_version(capsys, cache):
    _cache(cache, "2.4.5", "2.4.5")
    err = _bad(capsys, "agent=mini_swe_agent")
    assert "the cache has mini_swe_agent-2.4.5, not 2.4.6: agent.version=2.4.5 uses it" in err
    assert preflight.check(["sandbox=local", "agent=mini_swe_agent", "agent.version=2.4.5"]) is not None


def test_an_install_changed_in_place(capsys, cache):
    """The folder and stamp say 2.4.6, the package inside was upgraded: not the agent the run names."""
    here = _cache(cache, VERSION, "2.5.0")
    assert f"{here} holds mini-swe-agent 2.5.0, not {VERSION}" in _bad(capsys, "agent=mini_swe_agent")


def test_a_model_id_the_agent_does_not_accept(capsys, cache):
    _cache(cache)
    assert "agent.model_id='gpt-6' is not an id mini_swe_agent accepts (openai/.+, hosted_vllm/.+)" in _bad(
        capsys, "agent=mini_swe_agent", "agent.model_id=gpt-6"
    )


def test_an_agent_with_no_player(capsys, cache):
    _cache(cache)
    assert "agent=mini_swe_agent has no player yet" in _bad(capsys, "agent=mini_swe_agent", "agent.player=")
    assert "agent.player" in _bad(capsys, "agent=mini_swe_agent", "agent.player=bench.agents.mini:Nobody")


MB = 1 << 20
FAKE = {  # mini's side of the protocol replaced by a program that misbehaves after the instruction
    "exits 1": "import sys; sys.stdin.readline(); sys.stdin.readline(); sys.exit(1)\n",
    "hangs": "import sys, time; sys.stdin.readline(); sys.stdin.readline(); time.sleep(600)\n",
    "prints 100 MB on its protocol stream": "import os, sys, time; sys.stdin.readline(); sys.stdin.readline()\n"
    "for _ in range(100): os.write(1, b'x' * (1 << 20))\ntime.sleep(600)\n",
    "prints 100 MB on stderr": "import os, sys, time; sys.stdin.readline(); sys.stdin.readline()\n"
    "for _ in range(100): os.write(2, b'y' * (1 << 20))\ntime.sleep(600)\n",
}
REASON = {
    "exits 1": "model_error",
    "hangs": "timeout",
    "prints 100 MB on its protocol stream": "model_error",
    "prints 100 MB on stderr": "model_error",
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", list(FAKE))
def test_an_agent_that_misbehaves_is_the_agents_failure_on_the_record(how, tmp_path, monkeypatch):
    driver = tmp_path / "driver.py"
    driver.write_text(FAKE[how])
    monkeypatch.setattr(mini, "DRIVER", driver)
    monkeypatch.setattr(mini, "installed", lambda spec: Path(sys.executable))
    result = _trial(
        monkeypatch,
        tmp_path / "results",
        "model=sim",
        "agent.limits.turn_timeout_s=5",
        f"agent.limits.output_limit_bytes={MB}",
    )
    assert (result.status, result.failure_reason) == ("failure", REASON[how])
    assert result.outcome_class == outcomes.AGENT == outcomes.outcome_class(result.failure_reason)
    (turn,) = _records(result.events_path, "agent_turn")  # the turn is on the record, with what ended it
    assert turn["requests"] == 0 and turn["detail"]
    if "100 MB" in how:
        assert f"printed more than {MB} bytes" in turn["detail"]
    (end,) = _records(result.events_path, "trial_end")
    # the flood is not kept
    assert end["failure_reason"] == REASON[how] and result.events_path.stat().st_size < MB
