"""How much of the window the strategy may fill, in the harness's own tokens.

The harness counts a context's messages with its own tokenizer; a provider counts the whole
request with the model's: the messages, the tool schemas, the chat template's markers. A real
server counted 1,663 tokens where the harness counted 659, and a context the harness put at 938
tokens overflowed a 2,048-token server. So the window a strategy sees is the configured one
translated into harness tokens:

- before the provider has counted anything: the window less the tool schemas (harness-counted);
- after the first counted turn: scaled by the provider's count over the harness's (P = a·M);
- after two turns of different sizes: the line P = a·M + b through them (least squares, a >= 1),
  raised to lie above every observed pair, so no request seen so far would have been
  under-counted. The sim bills exactly messages + tool schemas: a = 1, b = the schemas.

Then the provider's count of the next request, P(M) <= window - max_output, whenever the
relation holds; a provider that sends no usage leaves the harness's own estimate in force.
"""

from __future__ import annotations

from collections.abc import Sequence


def relation(counts: Sequence[tuple[int, int]]) -> tuple[float, float] | None:
    """(a, b) with provider ≈ a · harness + b, above every observed (harness, provider) pair."""
    if not counts:
        return None
    xs = [float(m) for m, _ in counts]
    ys = [float(p) for _, p in counts]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx > 0:
        a = max(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx, 1.0)
    else:  # one size seen: proportional
        a = max(my / mx, 1.0) if mx > 0 else 1.0
    b = max(y - a * x for x, y in zip(xs, ys, strict=True))
    return a, max(b, 0.0)


def window(configured: int, max_output: int, overhead: int, counts: Sequence[tuple[int, int]]) -> int:
    fit = relation(counts)
    if fit is None:
        return configured - overhead
    a, b = fit
    return int((configured - max_output - b) / a) + max_output
