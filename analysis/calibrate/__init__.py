"""Fit the simulated model to finished trials (docs/calibration.md).

    python -m analysis.calibrate STUDY_OR_RUNS_OR_LOGS... --name NAME

reads event logs only (analysis never imports the harness) and writes
`conf/model/sim_NAME.yaml` (usable as `model=sim_NAME`) plus a fit report. Each parameter is
fitted from what the logs show, or keeps its prior and says so:

  recall, temptation, stale edits   observe.py + likelihood.py + fit.py (one likelihood)
  summariser retention              summaries.py (a binomial rate per kind of fact)
  latency, prompt cache             usage.py
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scipy import stats

from analysis.calibrate.fit import Estimate, RecallFit, dedupe, fit_recall
from analysis.calibrate.observe import Obs, observations
from analysis.calibrate.sources import Trial
from analysis.calibrate.summaries import KINDS as RETENTION
from analysis.calibrate.summaries import Kept, retention
from analysis.calibrate.usage import Call, calls, fit_cache, fit_latency
from analysis.settings import SettingsError, model_group

REPO = Path(__file__).resolve().parents[2]
CONF = REPO / "conf" / "model"
SIM_PROVIDERS = ("sim", "oracle")


@dataclass
class Calibration:
    name: str
    base: str
    prior: dict[str, Any]
    estimates: dict[str, Estimate]
    trials: list[Trial]
    obs: list[Obs] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    recall: RecallFit | None = None
    deduped: bool = False

    def value(self, key: str) -> Any:
        return self.estimates[key].value if key in self.estimates else self.prior[key]


def model_config(name: str, conf: Path = CONF) -> dict[str, Any]:
    """conf/model/NAME.yaml as the harness composes it (its `defaults`, and the schema's, merged in)."""
    try:
        return model_group(name, conf.parent)
    except SettingsError as exc:
        raise SystemExit(str(exc)) from None


def binomial(kept: Sequence[Kept], kind: str, prior: float, level: float = 0.95) -> Estimate:
    """Clopper-Pearson: exact, and honest at 0 and 1 (a summariser that never drops a plan line)."""
    ys = [k.y for k in kept if k.kind == kind]
    if not ys:
        return Estimate(prior, None, None, 0, "prior (no summary in the logs shows this kind of fact)")
    n, x = len(ys), sum(ys)
    a = (1 - level) / 2
    low = float(stats.beta.ppf(a, x, n - x + 1)) if x > 0 else 0.0
    high = float(stats.beta.ppf(1 - a, x + 1, n - x)) if x < n else 1.0
    return Estimate(x / n, low, high, n, "fitted (share kept by the summaries written)")


def calibrate(
    trials: list[Trial],
    name: str,
    *,
    base: str = "sim",
    free: Sequence[str] = (),
    match: str = "exact",
    crn: bool | None = None,
    level: float = 0.95,
) -> Calibration:
    """`crn`: keep one observation per random draw (the sim's common random numbers); by default
    on when every trial was played by the simulated model itself."""
    if not trials:
        raise SystemExit("no finished trials to calibrate on")
    models = sorted({str(t.get("model.model_id") or t.get("model.name")) for t in trials})
    if len(models) > 1:
        raise SystemExit(
            f"the trials were played by {len(models)} models ({', '.join(models)}): calibrate one at a time"
        )
    prior = model_config(base)["params"]
    crn = all(t.provider in SIM_PROVIDERS for t in trials) if crn is None else crn
    obs = [o for t in trials for o in observations(t.log, t.name)]
    kept = [k for t in trials for k in retention(t.log, match)]
    if crn:
        obs = dedupe(obs)
        kept = list({(k.kind, k.key): k for k in reversed(kept)}.values())[::-1]  # the first of each draw
    fitted = fit_recall(obs, prior, free=free, level=level)
    estimates = dict(fitted.estimates)
    for kind in RETENTION:
        estimates[kind] = binomial(kept, kind, prior[kind], level)
    cs = [c for t in trials for c in calls(t.log)]
    estimates.update(fit_latency(cs, level))
    estimates.update(fit_cache(cs, prior))
    for key, value in prior.items():
        estimates.setdefault(key, Estimate(float(value), None, None, 0, _why_prior(key)))
    return Calibration(name, base, prior, estimates, trials, obs, kept, cs, fitted, crn)


def _why_prior(key: str) -> str:
    if key in ("max_attempts", "max_edit_retries", "max_failure_reads"):
        return "prior (a harness-facing limit of the sim's behaviour, not a rate the logs estimate)"
    if key == "cache_ttl_s":
        return "prior (no pause in the logs long enough to show an expiry)"
    if key in ("recent_tokens", "rot_half_tokens", "rot_shape", "middle_shape", "middle_half_tokens"):
        return "prior (shape of the recall curve: not identifiable from a few trials; --free NAME fits it)"
    return "prior (the logs do not inform it)"
