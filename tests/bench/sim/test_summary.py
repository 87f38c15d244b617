"""The summariser: per-kind retention, verbatim or in its own words, real marker text, no files."""

from __future__ import annotations

from bench.core import render
from bench.core.toolspecs import TOOLS
from bench.core.types import Message
from bench.sim.provider import COMPACTION_MARKER
from tests.helpers.sim_world import CLIENT, INV, INV_LATE, make_task, prefix, provider, run

PROMPT = f"{COMPACTION_MARKER}\nSummarise the conversation above for a fresh engineer."
SEEDS = range(3000, 3300)


def transcript_in_step_two():
    """A raw transcript through s01 and into s02 (its file read), under the oracle."""
    task = make_task()
    _, msgs, _ = run(provider("oracle", task), task, seed=1)
    cut = next(i for i, m in enumerate(msgs) if m.role == "user" and "CURRENT STEP [step:s02]" in m.content)
    s02 = msgs[: cut + 3]  # header, the read call, the file block
    # The late invariant as s02's hand-off states it, in passing, in the middle of the transcript.
    s02.insert(cut, Message("user", "Reviewer remark: " + "\n" + render.invariant_line(INV_LATE)))
    return task, s02


def summarise(task, msgs, seed, model="sim"):
    sim = provider(model, task)
    return sim.complete(tuple(msgs) + (Message("user", PROMPT),), (), max_tokens=4096, seed=seed)


def test_summary_is_marker_text_with_the_current_step_and_no_files():
    task, msgs = transcript_in_step_two()
    c = summarise(task, msgs, 3000, "oracle")
    assert c.stop_reason == "end_turn" and not c.tool_calls
    assert "<file " not in c.content and render.parse_file_blocks(c.content) == []
    assert render.parse_current_step(c.content) == "s02"
    assert {i for i, _ in render.parse_invariants(c.content)} == {INV.id, INV_LATE.id}
    assert ("s01", True, None) in render.parse_check_results(c.content)
    assert c.usage.prompt > 0 and c.usage.output > 0 and c.cost_usd > 0


def test_retention_is_per_kind_and_some_is_paraphrase():
    task, msgs = transcript_in_step_two()
    kept = {"plan": 0, "task_inv": 0, "late_inv": 0, "task_verbatim": 0}
    for seed in SEEDS:
        text = summarise(task, msgs, seed).content
        invs = {i for i, _ in render.parse_invariants(text)}
        kept["plan"] += "[step:s03] Write the probe" in text
        kept["task_inv"] += INV.text in text  # verbatim, or in its own words (unmarked)
        kept["task_verbatim"] += INV.id in invs
        kept["late_inv"] += INV_LATE.text in text
        assert render.parse_current_step(text) == "s02"  # the current step always survives
    rates = {k: v / len(SEEDS) for k, v in kept.items()}
    print("summary retention:", {k: round(v, 3) for k, v in rates.items()})
    assert rates["plan"] > 0.88 and rates["task_inv"] > 0.82 and 0.2 < rates["late_inv"] < 0.4
    assert 0.6 < rates["task_verbatim"] / rates["task_inv"] < 0.8  # p_verbatim = 0.7


def test_summariser_loss_off_keeps_every_statement_verbatim():
    task, msgs = transcript_in_step_two()
    lossless = provider("sim", task, mechanisms={"summariser_loss": False})
    for seed in list(SEEDS)[:60]:
        text = lossless.complete(
            tuple(msgs) + (Message("user", PROMPT),), (), max_tokens=4096, seed=seed
        ).content
        assert {i for i, _ in render.parse_invariants(text)} == {INV.id, INV_LATE.id}


def test_the_next_turn_perceives_the_summary_like_any_text():
    task, msgs = transcript_in_step_two()
    summary = summarise(task, msgs, 3000, "oracle").content
    compacted = [*prefix(task), Message("user", "SUMMARY OF EARLIER TURNS\n\n" + summary)]
    c = provider("oracle", task).complete(tuple(compacted), TOOLS, max_tokens=4096, seed=1)
    # The file contents did not survive, so it reads the step's file again before editing.
    assert [(t.name, t.args) for t in c.tool_calls] == [("read_file", {"path": CLIENT})]


def test_summary_draws_are_shared_across_contexts_with_the_same_facts():
    """Keyed by (seed, fact, passed checks), not by how the transcript around them looks."""
    task, msgs = transcript_in_step_two()
    padded = msgs[:3] + [Message("user", "unrelated note")] * 4 + msgs[3:]
    for seed in list(SEEDS)[:40]:
        a = render.parse_invariants(summarise(task, msgs, seed).content)
        b = render.parse_invariants(summarise(task, padded, seed).content)
        assert a == b


def test_a_summary_does_not_grow_on_its_own_prompt_or_a_transcripts_json():
    """Regression (oracle, strategy=compaction, arm=compaction, config_rename seed 9300 failed
    with output_truncation): a transcript rendered as text shows a hand-off as JSON, so the
    invariant line came back as `... model."}` and was copied once more per compaction, and the
    compaction prompt's own keep-sentences were kept as if they were the task's."""
    task, msgs = transcript_in_step_two()
    line = render.invariant_line(INV)
    rendered = Message(
        "user",
        "TRANSCRIPT TO SUMMARISE\n[tool call submit_step] "
        f'{{"invariants": [], "notes": "s01: done. {line}"}}',
    )
    prompt = Message(
        "user", f"{COMPACTION_MARKER}\nKeep every constraint verbatim. Do not copy file contents."
    )
    sim = provider("oracle", task)
    c = sim.complete(tuple(msgs) + (rendered, prompt), (), max_tokens=4096, seed=3000)
    assert c.content.count(INV.text.rstrip(".")) == 1, c.content
    assert (
        '"}' not in c.content and "Keep every constraint" not in c.content and "Do not copy" not in c.content
    )
