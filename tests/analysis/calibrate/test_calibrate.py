"""analysis.calibrate: the likelihood recovers known parameters; the restated reader matches the sim;
a calibration of real harness logs writes a config Hydra composes and the sim accepts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from analysis.calibrate import calibrate, model_config
from analysis.calibrate.__main__ import main as calibrate_main
from analysis.calibrate.fit import fit_recall
from analysis.calibrate.likelihood import FREE, Design, best, probability
from analysis.calibrate.observe import Obs
from analysis.calibrate.recovery import splits, truth
from analysis.calibrate.sources import load, parse
from ctxlog import events as ev

REPO = Path(__file__).resolve().parents[3]
PRIOR = model_config("sim")["params"]
TRUE = {
    **PRIOR,
    "recall_max": 0.9,
    "recall_recent": 0.95,
    "rot_max_drop": 0.6,
    "middle_dip": 0.45,
    "p_tempt": 0.7,
    "p_paraphrase": 0.35,
    "p_stale_replace_fail": 0.65,
    "p_stale_clobber": 0.3,
}


def synthetic(rng: np.random.Generator, n: int = 600) -> list[Obs]:
    """Observations with the covariates real logs have (lengths 2k-60k tokens, any position,
    some just seen), outcomes drawn from the sim's own probabilities at TRUE."""
    kinds = rng.choice(["handoff", "tidy", "stale_replace", "stale_write"], size=n, p=[0.5, 0.25, 0.15, 0.1])
    obs = []
    for i, kind in enumerate(kinds):
        length = int(rng.uniform(2000, 60000))
        k = int(rng.integers(0, 3)) if kind == "tidy" else 1
        occ = tuple(
            (float(rng.uniform(0, length)), bool(kind == "tidy" and rng.random() < 0.4)) for _ in range(k)
        )
        obs.append(Obs(str(kind), False, occ, length, float(length), ("s", i), "synthetic", i))
    p = probability(TRUE, Design.of(obs))
    return [
        Obs(o.kind, bool(rng.random() < q), o.occ, o.length, o.fresh_from, o.key, o.trial, o.turn)
        for o, q in zip(obs, p, strict=True)
    ]


def test_profile_intervals_cover_the_true_parameters():
    rng = np.random.default_rng(7)
    covered, total = 0, 0
    for _ in range(5):
        fit = fit_recall(synthetic(rng), PRIOR)
        for name in FREE:
            e = fit.estimates[name]
            assert e.source.startswith("fitted") and e.low <= e.value <= e.high
            covered += e.low <= TRUE[name] <= e.high
            total += 1
    # 95 % intervals: 40 checks; fewer than 33 covered would be a 1-in-1000 event if they are right.
    assert covered >= 33, f"{covered}/{total}"


def test_parameters_no_observation_informs_keep_their_prior():
    obs = [o for o in synthetic(np.random.default_rng(1), 300) if o.kind == "handoff"]
    fit = fit_recall(obs, PRIOR)
    for name in ("p_tempt", "p_paraphrase", "p_stale_replace_fail", "p_stale_clobber"):
        e = fit.estimates[name]
        assert e.value == PRIOR[name] and e.low is None and e.source.startswith("prior")
    assert fit.estimates["recall_max"].source.startswith("fitted")


def test_a_just_seen_fact_is_recalled_with_recall_recent_and_the_middle_dips():
    p = {**PRIOR, "recall_recent": 0.9}
    mk = lambda x: Obs("handoff", True, ((x, False),), 20000, 20000.0, (), "t", 0)  # noqa: E731
    m = best(p, Design.of([mk(19900.0), mk(10000.0), mk(100.0)]))
    assert m[0] == pytest.approx(0.9) and m[1] < m[2] < p["recall_max"]


# -- real harness logs ----------------------------------------------------------------------------
TRUTH = {
    "p_tempt": 0.8,
    "retain_fact": 0.3,
    "latency_base_s": 0.7,
    "decode_s_per_token": 0.02,
    "cache_block_tokens": 64,
}


@pytest.fixture(scope="module")
def sim_trials(tmp_path_factory):
    """Two short trials of the sim through the real config, with parameters that are not the defaults."""
    root = tmp_path_factory.mktemp("calib")
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "-m",
        "strategy=compaction",
        "arm=compaction",
        "rep=0,1",
        "task.size.steps=7",
        "sandbox=local",
        "study.name=calibtest",
        *(f"model.params.{k}={v}" for k, v in TRUTH.items()),
    ]
    proc = subprocess.run(
        cmd,
        cwd=REPO,
        env={**os.environ, "CTXBENCH_RESULTS": str(root)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root


def test_restated_protection_equals_the_sims_own(sim_trials):
    """The harness's tidy-up chances are the sim's decisions, and the analysis's protection q
    (restated reader + recall curve) is the q the sim logged: the restatement is exact."""
    trials = load([str(sim_trials)], "sqlite:////nonexistent")
    compared = 0
    for t in trials:
        from analysis.calibrate.observe import observations

        decisions = {(r.turn, d["key"]): d for r in t.log.of(ev.ModelCall) for d in r.decisions or ()}
        chances = {(r.turn, r.key): r for r in t.log.of(ev.TidyUp)}
        assert set(decisions) <= set(chances)
        assert all(chances[k].taken == d["done"] for k, d in decisions.items())
        tidy = [o for o in observations(t.log, t.name) if o.kind == "tidy"]
        params = t.get("model.params")
        for o, q in zip(tidy, best(params, Design.of(tidy)), strict=True):
            d = decisions.get((o.turn, o.key[3].removeprefix("tidy:")))
            if d is not None:
                assert q == pytest.approx(d["q"], abs=1e-5)
                compared += 1
    assert compared > 0


def test_calibrate_writes_a_config_hydra_composes(sim_trials, tmp_path, capsys):
    conf_dir, report = tmp_path / "conf" / "model", tmp_path / "report"
    assert (
        calibrate_main(
            [str(sim_trials), "--name", "ctest", "--conf-dir", str(conf_dir), "--report-dir", str(report)]
        )
        == 0
    )
    assert "model=sim_ctest" in capsys.readouterr().out
    assert {p.name for p in report.iterdir()} >= {"fit.md", "fit.png", "fit.json"}
    fit = json.loads((report / "fit.json").read_text())["params"]
    for key in ("retain_fact", "latency_base_s", "decode_s_per_token", "cache_block_tokens"):
        e = fit[key]
        assert e["n"] > 0 and e["low"] <= TRUTH[key] <= e["high"], (key, e)
    assert fit["rot_half_tokens"]["source"].startswith("prior")
    text = (conf_dir / "sim_ctest.yaml").read_text()
    assert "defaults:\n  - sim\n  - _self_" in text and "# 95% [" in text and "# prior (" in text

    from bench.config import compose
    from bench.config import load as load_cfg
    from bench.sim.params import SimParams

    cfg = load_cfg(compose(["model=sim_ctest", f"hydra.searchpath=[file://{tmp_path / 'conf'}]"]))
    assert cfg.model["name"] == "sim_ctest"
    SimParams.from_mapping(cfg.model["params"], cfg.model.get("mechanisms"))
    assert cfg.model["params"]["retain_fact"] == pytest.approx(fit["retain_fact"]["value"], rel=1e-3)


def test_recovery_splits_are_disjoint_and_need_one_truth(sim_trials):
    trials = load([str(sim_trials)], "sqlite:////nonexistent")
    assert truth(trials)["p_tempt"] == TRUTH["p_tempt"]
    parts = splits(trials, 1)
    assert sorted(t.name for t in parts[0]) == sorted(t.name for t in trials)
    other = parse(
        json.dumps({"kind": "trial_end", "status": "success"}),
        "x",
        yaml.safe_dump({"model": {"params": {**PRIOR, "p_tempt": 0.1}}}),
    )
    with pytest.raises(SystemExit, match="different sim parameters"):
        truth([*trials, other])
    with pytest.raises(SystemExit, match="no finished trials"):
        calibrate([], "x")
    claude = parse(
        json.dumps({"kind": "trial_end", "status": "success"}),
        "y",
        yaml.safe_dump({"model": {"name": "anthropic", "model_id": "claude-x"}}),
    )
    with pytest.raises(SystemExit, match="played by 2 models"):
        calibrate([*trials, claude], "x")


def _said(text: str, i: int):
    from analysis.calibrate.reading import Said, normal

    return Said(text, normal(text), float(i), i, 0, False, "assistant", False, False)


def test_a_sim_hand_off_is_read_exactly_and_a_real_one_by_content():
    from analysis.calibrate.observe import restated

    s1, s2 = _said("Keep pull accepting the legacy form", 0), _said("never inline _send", 1)
    longer = _said("For later steps: Keep pull accepting the legacy form.", 2)
    # The sim's notes: its template, then what it recalls, in context order, full stops added.
    assert restated(
        [s1, s2, longer], "s03: edited a.py. For later steps: Keep pull accepting the legacy form."
    ) == {s1.norm}
    assert restated(
        [s1, s2, longer],
        "s03: edited a.py. For later steps: For later steps: Keep pull accepting the legacy form.",
    ) == {longer.norm}
    assert restated([s1, s2, longer], "s03: edited a.py. No further constraints for later steps.") == set()
    # A real model's words: found by content, not inside a longer statement found there too.
    assert restated([s1, s2], "Remember: keep pull accepting the legacy form; never inline _send!") == {
        s1.norm,
        s2.norm,
    }
    assert restated([s1, longer], "as noted, for later steps: keep pull accepting the legacy form.") == {
        longer.norm
    }


def test_the_figure_of_a_calibration_with_empty_panels_draws_without_a_warning(tmp_path):
    """A real pilot (make real-pilot) can have no hand-off restatement and no timed call: the
    figure says "no observations" there instead of matplotlib's legend warning on stderr."""
    import warnings

    from analysis.calibrate import Calibration
    from analysis.calibrate.report import figure

    cal = Calibration("empty", "sim", dict(PRIOR), {}, [])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure(cal, tmp_path / "fit.png")
    assert (tmp_path / "fit.png").stat().st_size > 0
