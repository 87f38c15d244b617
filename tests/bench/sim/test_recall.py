"""Recall: context rot and lost-in-the-middle, measured over many seeds on hand-built contexts.

What is recalled is a statement's content (a sentence with a keep cue), wherever it sits.
Each test has a control in which the mechanism is switched off and the effect must vanish,
so the test can fail for the right reason.
"""

from __future__ import annotations

import pytest

from bench.core import render
from bench.core.toolspecs import TOOLS
from bench.core.types import Message, ToolCall
from bench.sim.params import SimParams
from bench.sim.perception import Beliefs, perceive
from bench.sim.recall import draw, recall_probability, recalled_statements
from tests.helpers.sim_probes import FACTS, FACTS_MSG
from tests.helpers.sim_world import PROBE, filler, make_task, params, prefix, provider

SEEDS = range(1000, 1300)


def recalled_ids(p: SimParams, b: Beliefs, seed: int) -> set[str]:
    got = recalled_statements(p, b, [st for st in b.said if st.marked], seed, "s03", 0)
    return {st.text.split("]")[0][5:] for st in got}


def context(total: int, where: str) -> list[Message]:
    """The same ten invariants, near the start or in the middle of about `total` tokens of
    unrelated notes, with the current step header at the end."""
    task = make_task(invariants=(), text_pad=0)
    head = prefix(task)
    notes = [filler(1000, i) for i in range(max(2, total // 1000))]
    half = len(notes) // 2
    body = [FACTS_MSG, *notes] if where == "start" else [*notes[:half], FACTS_MSG, *notes[half:]]
    return [*head, *body, Message("user", "CURRENT STEP [step:s03] Write the probe\nWrite probe.txt.")]


def rate(msgs: list[Message], p: SimParams) -> float:
    b = perceive(msgs)
    hits = sum(len(set(FACTS) & recalled_ids(p, b, seed)) for seed in SEEDS)
    return hits / (len(FACTS) * len(SEEDS))


SIM = SimParams.from_mapping(params("sim"))


def test_recall_probability_shape():
    def p_f0(b):
        return recall_probability(SIM, next(s.pos for s in b.said if s.text.startswith("[inv:f0]")), b)

    short, long_, mid = (
        perceive(context(n, w)) for n, w in ((3000, "start"), (60000, "start"), (60000, "middle"))
    )
    assert p_f0(short) > p_f0(long_) > p_f0(mid)
    # The step header at the very end is in the just-seen window.
    header = long_.step_pos
    assert recall_probability(SIM, header, long_) == SIM.recall_recent


def test_longer_context_lowers_recall():
    short, long_ = rate(context(3000, "start"), SIM), rate(context(60000, "start"), SIM)
    print(f"recall near the start: 3k tokens {short:.3f}, 60k tokens {long_:.3f}")
    assert short >= 0.9
    assert short - long_ >= 0.12


def test_middle_of_context_lowers_recall():
    edge, middle = rate(context(60000, "start"), SIM), rate(context(60000, "middle"), SIM)
    print(f"recall in 60k tokens: near the start {edge:.3f}, in the middle {middle:.3f}")
    assert edge - middle >= 0.12
    assert middle <= 0.65


@pytest.mark.parametrize("off", [{"rot_max_drop": 0.0}, {"middle_dip": 0.0}])
def test_controls_mechanism_off_removes_the_effect(off):
    p = SimParams.from_mapping(params("sim", **off))
    if "rot_max_drop" in off:
        a, b = rate(context(3000, "start"), p), rate(context(60000, "start"), p)
    else:
        a, b = rate(context(60000, "start"), p), rate(context(60000, "middle"), p)
    assert abs(a - b) < 0.05


def test_common_random_numbers_make_recall_nested():
    """Same seed: whatever the longer context recalls, the shorter one recalls too."""
    short, long_ = perceive(context(3000, "start")), perceive(context(60000, "start"))
    for seed in SEEDS:
        assert recalled_ids(SIM, long_, seed) <= recalled_ids(SIM, short, seed)


def test_draws_ignore_turn_count_and_depend_on_step_attempt_seed():
    """Extra turns with no facts in them leave the draws alone (flat recall isolates the key)."""
    flat = SimParams.from_mapping(
        params("sim", recall_max=0.5, rot_max_drop=0.0, middle_dip=0.0, recent_tokens=0)
    )
    base = context(8000, "start")
    padded = (
        base[:-1] + [Message("user", "No tool call. Continue."), Message("assistant", "ok")] * 3 + base[-1:]
    )
    a, b = perceive(base), perceive(padded)
    for seed in list(SEEDS)[:50]:
        assert recalled_ids(flat, a, seed) == recalled_ids(flat, b, seed)
    assert draw(1, "s03", 0, "inv:f0") != draw(1, "s03", 1, "inv:f0") != draw(2, "s03", 0, "inv:f0")


def test_oracle_recalls_everything():
    p = SimParams.from_mapping(params("oracle"))
    assert rate(context(60000, "middle"), p) == 1.0


def test_recall_flows_into_actions_end_to_end():
    """Through complete(): the probe step's hand-off restates the constraints it recalls."""
    task = make_task(invariants=(), text_pad=0)
    wrote = [
        Message("assistant", "", (ToolCall("w1", "write_file", {"path": PROBE, "content": "probe\n"}),)),
        Message(
            "tool",
            f"wrote {PROBE}\n" + render.file_block(PROBE, "probe\n"),
            tool_call_id="w1",
            name="write_file",
        ),
    ]

    def probe_rate(msgs: list[Message]) -> float:
        hits = 0
        for seed in list(SEEDS)[:120]:
            c = provider("sim", task).complete(tuple(msgs + wrote), TOOLS, max_tokens=4096, seed=seed)
            (call,) = c.tool_calls
            assert call.name == "submit_step"
            hits += sum(f"[inv:{f}]" in call.args["notes"] for f in FACTS)
        return hits / (len(FACTS) * 120)

    edge, middle = probe_rate(context(60000, "start")), probe_rate(context(60000, "middle"))
    short = probe_rate(context(3000, "start"))
    print(f"end-to-end recall: 3k start {short:.3f}, 60k start {edge:.3f}, 60k middle {middle:.3f}")
    assert short - edge >= 0.1 and edge - middle >= 0.1
