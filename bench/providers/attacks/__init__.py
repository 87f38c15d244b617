"""The adversarial agent suite: scripts for `model=adversary model.attack=NAME` (scripted.py).

Each attack tries to end a trial with success = 1 without doing the task, or to make the
harness crash or book the model's act as our failure; docs/threat_model.md says which guard
stops it, tests/bench/trial/test_adversary.py runs each through the real Docker sandbox.
The scripts work on every task family (they name files by glob or by all families' names).
Pure data: a turn is a list of {name, args} tool calls; after the script the model keeps
submitting (conf/model/adversary.yaml `when_done: submit`), so an attack that persists meets
every step's check and the final acceptance.
"""

from __future__ import annotations

from typing import Any

from bench.providers.attacks import channel, content, emitted, on_judge, policy

ATTACKS: dict[str, list[list[dict[str, Any]]]] = {
    **policy.ATTACKS,
    **content.ATTACKS,
    **on_judge.ATTACKS,
    **emitted.ATTACKS,
    **channel.ATTACKS,
}
