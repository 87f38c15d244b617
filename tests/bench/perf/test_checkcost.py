"""`make bench`'s certify row (bench/perf/checkcost.py): the final acceptance is timed without and
with the family's hidden checks, and the row says what the hidden checks cost. Plumbing only: the
figures are whatever this machine measured, never asserted against a target."""

from __future__ import annotations

import pytest

from bench.perf.checkcost import certify_cost, certify_text


@pytest.mark.docker
def test_the_certify_row_times_the_final_acceptance_with_and_without_its_hidden_checks(docker_ready):
    out = certify_cost("signature_migration", n=1)
    # Only the final acceptance as the loop runs it reaches the judge with hidden checks.
    assert out["step_check"]["hidden_parts"] == 0 and out["final"]["hidden_parts"] == 0
    assert out["final_hidden"]["hidden_parts"] > 0
    assert out["final"]["command"] == out["final_hidden"]["command"]  # the same visible parts both times
    assert all(out[k]["n"] == 1 and out[k]["ms_p50"] > 0 for k in ("step_check", "final", "final_hidden"))
    line = certify_text(out)
    cost = round(out["final_hidden"]["ms_p50"] - out["final"]["ms_p50"], 1)
    assert f"final with its hidden checks ({out['final_hidden']['hidden_parts']} part" in line
    assert f"the hidden checks cost {cost} ms" in line
