"""Each mechanism of the simulated model has a switch (`model.mechanisms`), and switching it off
makes its effect disappear while the others keep theirs. The summariser's switch is tested in
test_summary.py, the drift kinds' (an environment switch, `arm.drift_kinds`) in
tests/bench/trial/test_drift_kinds.py."""

from __future__ import annotations

import pytest

from bench.sim.params import MECHANISMS, SimParams
from bench.sim.perception import perceive
from bench.sim.provider import from_config
from bench.sim.recall import protection
from tests.helpers.configs import model_config
from tests.helpers.sim_probes import FACTS_MSG, damage_rate, memory_context, shim_context, shim_removal_rate
from tests.helpers.sim_world import filler, make_task, params, prefix

ON = SimParams.from_mapping(params("sim"))


def off(name: str) -> SimParams:
    return SimParams.from_mapping(params("sim"), {name: False})


def placed(total: int) -> list:
    """FACTS_MSG (ten constraints) after `total` tokens of notes, before as many again."""
    head = prefix(make_task(invariants=(), text_pad=0))
    notes = [filler(1000, i) for i in range(max(1, total // 1000))]
    return [*head, *notes, FACTS_MSG, *notes]


def test_recall_decay_off_makes_length_and_position_irrelevant():
    short, long_ = perceive(placed(2000)), perceive(placed(60000))
    anchors = ("f3",)
    on = (protection(ON, anchors, short), protection(ON, anchors, long_))
    gone = (protection(off("recall_decay"), anchors, short), protection(off("recall_decay"), anchors, long_))
    print(f"protection short/long: decay on {on}, off {gone}")
    assert on[0] - on[1] > 0.2
    assert gone[0] == gone[1] == ON.recall_max


def test_temptation_off_means_no_tidy_up_however_unprotected():
    task = make_task(text_pad=0)
    assert abs(shim_removal_rate(shim_context(task)) - 0.5) < 0.07
    assert shim_removal_rate(shim_context(task), mechanisms={"temptation": False}) == 0.0


def test_stale_memory_off_removes_version_confusion():
    for mode in ("replace", "write"):
        task = make_task(mode, text_pad=0)
        msgs = memory_context(task, False)
        assert damage_rate(task, msgs) >= 0.1
        assert damage_rate(task, msgs, mechanisms={"stale_memory": False}) == 0.0


def test_switches_set_exactly_their_parameters_and_come_from_the_model_config():
    for name, overrides in MECHANISMS.items():
        p = off(name)
        for field, value in overrides.items():
            assert getattr(p, field) == value
        others = {k for m, o in MECHANISMS.items() if m != name for k in o} - set(overrides)
        assert all(getattr(p, k) == getattr(ON, k) for k in others), name
    cfg = model_config("sim")
    assert set(cfg["mechanisms"]) == set(MECHANISMS) and all(cfg["mechanisms"].values())
    sim = from_config({**cfg, "mechanisms": {"temptation": False}})
    assert sim.params.p_tempt == 0.0 and sim.params.rot_max_drop == ON.rot_max_drop


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"memory": False}, "model.mechanisms.memory: unknown key 'memory'"),
        ({"temptation": "no"}, "model.mechanisms.temptation: Input should be a valid boolean"),
    ],
)
def test_bad_switches_are_clear_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        SimParams.from_mapping(params("sim"), bad)
