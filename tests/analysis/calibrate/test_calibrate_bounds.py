"""Calibration writes only parameters the simulator accepts (issue 21, defect 5): on real logs
the ttft regression fitted latency_s_per_cached_token = -2.48e-4, and model=sim_smol then
failed with "must be >= 0". The fit is constrained; a value at a bound is reported as such."""

from __future__ import annotations

import numpy as np

from analysis.calibrate.usage import Call, fit_latency


def _real_like_calls() -> list[Call]:
    """A server whose cached prefixes make long prompts *faster*: the unconstrained slope is < 0."""
    rng = np.random.default_rng(7)
    out = []
    for _ in range(40):
        uncached, cached, output = (
            int(rng.integers(100, 1500)),
            int(rng.integers(0, 3000)),
            int(rng.integers(5, 200)),
        )
        ttft = 0.4 + 0.01 * uncached - 2.5e-4 * cached + float(rng.normal(0, 0.05))
        out.append(Call(uncached, output, cached, 0, max(ttft, 0.01), max(ttft, 0.01) + 0.03 * output))
    return out


def test_latency_coefficients_stay_in_the_sims_range_and_a_bound_is_named():
    est = fit_latency(_real_like_calls())
    for name in (
        "latency_base_s",
        "latency_s_per_uncached_token",
        "latency_s_per_cached_token",
        "decode_s_per_token",
    ):
        e = est[name]
        assert (
            e.value >= 0 and e.low is not None and e.low >= 0 and e.high is not None and e.high >= e.value
        ), name
    cached = est["latency_s_per_cached_token"]
    assert (
        cached.value == 0.0 and "at the lower bound 0" in cached.source and "unconstrained -" in cached.source
    )
    assert "lower bound" not in est["latency_s_per_uncached_token"].source
    assert abs(est["latency_s_per_uncached_token"].value - 0.01) < 0.002


def test_the_written_config_is_one_the_simulator_accepts(monkeypatch):
    from analysis.calibrate import write
    from bench.sim.params import SimParams

    class C:  # the part of a Calibration that yaml_text reads
        name, base, trials = "bounds", "sim", []
        estimates = fit_latency(_real_like_calls())

    import yaml

    from bench.config import compose, load

    prior = dict(load(compose(["model=sim"])).model["params"])  # the SimParams defaults, composed
    C.prior = {k: prior[k] for k in C.estimates}
    C.value = staticmethod(lambda k: C.estimates[k].value if k in C.estimates else prior[k])
    text = write.yaml_text(C, "test", __import__("pathlib").Path("fit.md"))  # type: ignore[arg-type]
    assert "AT THE LOWER BOUND 0" in text
    params = yaml.safe_load(text)["params"]
    SimParams.from_mapping({**prior, **params}, {})  # raises on a value outside the valid range
