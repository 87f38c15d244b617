"""Context size per turn for each strategy on the 12-step hand-built run, and ledger build time.

PYTHONPATH=. python -m tests.strategies.figures   (a diagnostic script, not a test)
"""

from __future__ import annotations

import statistics
import time

from bench.core.tokens import count_text
from strategies import STRATEGIES, make_strategy
from tests.helpers import strategy_loop as fx


class Timed:
    """Wraps a strategy and times every `build` the real loop makes (tests/helpers/strategy_loop.py)."""

    def __init__(self, inner):
        self.inner, self.times = inner, []

    def __getattr__(self, name):  # the strategy's own knobs, as the loop reads them
        return getattr(self.inner, name)

    def build(self, state):
        t0 = time.perf_counter()
        out = self.inner.build(state)
        self.times.append(time.perf_counter() - t0)
        return out

    def summary_request(self, state):
        return self.inner.summary_request(state)


def main() -> None:
    task = fx.make_task(n_steps=12)
    for window in (200_000, 5000):
        print(f"\n== window {window} (budget {window - 1000}); context tokens per turn, '|' = step head")
        for name in STRATEGIES:
            tr = fx.run(make_strategy({"name": name}), task, window=window)
            cells = [("|" if t in tr.step_heads else "") + str(b.tokens) for t, b in enumerate(tr.builts)]
            print(f"{name:>10}: {' '.join(cells)}")
            print(
                f"{'':>10}  step heads: {[tr.builts[t].tokens for t in tr.step_heads]}"
                f"  compactions={len(tr.compactions)} dropped={sum(b.dropped for b in tr.builts)}"
            )
    big = fx.make_task(n_steps=40, n_files=12, file_lines=60)
    count_text.cache_clear()
    timed = Timed(make_strategy({"name": "ledger"}))
    fx.run(timed, big, window=200_000)
    ms = [t * 1000 for t in timed.times]
    print(
        f"\nledger build on a 40-step task ({len(ms)} turns, token cache cold at start): "
        f"p50 {statistics.median(ms):.2f} ms, p95 {sorted(ms)[int(0.95 * len(ms))]:.2f} ms, max {max(ms):.2f} ms"
    )


if __name__ == "__main__":
    main()
