"""An infrastructure failure still records the tree the model left (issue 21, defect 8: RUN.md
showed `final tree:` empty for provider_error trials)."""

from __future__ import annotations

from bench.core.outcomes import INFRA
from bench.providers.base import ProviderError
from tests.bench.trial.conftest import SOLVE


class FailsSecond:
    def __init__(self, inner):
        self.inner, self.model_id, self.calls = inner, inner.model_id, 0

    def complete(self, *a, **k):
        self.calls += 1
        if self.calls == 2:
            raise ProviderError("openai model x: server_error http_500 after 3 attempt(s)")
        return self.inner.complete(*a, **k)

    def close(self):
        self.inner.close()


def test_a_provider_error_keeps_the_final_tree(scripted_trial, monkeypatch):
    import bench.trial.runner as runner

    real = runner.providers.make_provider
    monkeypatch.setattr(runner.providers, "make_provider", lambda cfg: FailsSecond(real(cfg)))
    result, _ = scripted_trial(SOLVE)
    assert (result.outcome_class, result.failure_reason) == (INFRA, "provider_error")
    run_md = (result.events_path.parent / "RUN.md").read_text()
    line = next(x for x in run_md.splitlines() if x.startswith("- final tree:"))
    assert line.startswith("- final tree: `") and "``" not in line, line
