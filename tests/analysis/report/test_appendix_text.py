"""The report's appendix text, from the measures of hand-made trials."""

from __future__ import annotations

from analysis.fairness import channels
from analysis.measures import appendix
from analysis.report import appendix as text_of
from tests.analysis.measures.test_appendix import trials


def test_markdown_section_renders_every_part():
    t = trials(lambda s, a, k: int(k < 2))
    parts = {
        "recovery": appendix.recovery(t),
        "expected": appendix.expected_vs_observed(t),
        "seed_share": appendix.seed_share(t),
        "ablations": appendix.ablations(t),
        "invariants_from": appendix.invariants_from(t),
        "channels": channels.listing(t),
    }
    text = "\n".join(text_of.section(parts))
    assert "## Appendix: the instrument" in text and "eta² = 1.00" in text and "Wilson" in text
    assert "What each strategy showed beyond the transcript" in text
    assert "ledger[files,tree,drift_note,harness_invariants]" in text and "raw[]" in text
    assert "carried invariants from: harness (8 trials)" in text
