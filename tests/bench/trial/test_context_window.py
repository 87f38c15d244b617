"""The window a strategy may fill follows the provider's own count of the requests (issue 21,
defect 3): what the harness counted as 938 tokens must not reach a 2,048-token server."""

from __future__ import annotations

from bench.trial.context_window import relation, window


def test_before_any_count_the_tool_schemas_are_taken_off():
    assert window(4096, 256, 600, []) == 3496


def test_one_count_scales_the_window():
    # The measurement: the server counted 1,663 tokens for a request the harness put at 659.
    w = window(2048, 256, 600, [(659, 1663)])
    budget = w - 256
    assert budget < 938 * 1 and int(budget * 1663 / 659) <= 2048 - 256  # 938 no longer fits
    assert window(2048, 256, 600, [(659, 659)]) == 2048  # a provider that counts as we do


def test_two_sizes_give_a_line_above_every_observation():
    # The sim bills messages + schemas exactly: a = 1, b = the schemas.
    assert relation([(1000, 1500), (3000, 3500)]) == (1.0, 500.0)
    assert window(12000, 1000, 500, [(1000, 1500), (3000, 3500)]) == 11500
    counts = [(659, 1663), (900, 2200), (1200, 2800)]
    a, b = relation(counts)
    assert a >= 1 and all(a * m + b >= p - 1e-9 for m, p in counts)
    w = window(4096, 256, 600, counts)
    assert a * (w - 256) + b <= 4096 - 256 + 1e-6  # the provider's count stays within the window


def test_the_arm_window_is_bounded_by_the_models(caplog):
    """Defect 4: arm=compaction sent a 12,000-token window to a model configured with 8,192."""
    from bench.config import compose, load
    from bench.trial.runner import arm_window

    assert arm_window(load(compose(["arm=compaction", "model=smollm2", "model.window=8192"]))) == 8192
    assert "asks for a 12000-token window" in caplog.text
    assert arm_window(load(compose(["arm=compaction"]))) == 12000  # the sim's 200,000 leaves the arm's
    assert arm_window(load(compose(["arm=baseline", "model=smollm2"]))) == 4096
