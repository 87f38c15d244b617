"""The calibrated model as a Hydra config, and the fit as JSON.

`conf/model/sim_NAME.yaml` inherits from its base (`defaults: [sim, _self_]`) and sets every
parameter, each with a comment: fitted value's interval and the number of observations behind
it, or "prior" and why the logs could not inform it. `fit.json` beside the report holds the
same numbers for programs (analysis.calibrate.fidelity, the recovery study).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Any

from analysis.calibrate import REPO, Calibration

INTS = (
    "recent_tokens",
    "max_attempts",
    "max_edit_retries",
    "max_failure_reads",
    "cache_block_tokens",
    "cache_min_tokens",
)
GROUPS = (
    (
        "recall (handoffs, tidy-up protection, file versions)",
        (
            "recall_max",
            "recall_recent",
            "recent_tokens",
            "rot_max_drop",
            "rot_half_tokens",
            "rot_shape",
            "middle_dip",
            "middle_shape",
            "middle_half_tokens",
        ),
    ),
    (
        "action (tidy-ups on offer, edits of files in view)",
        (
            "p_tempt",
            "p_paraphrase",
            "p_stale_replace_fail",
            "p_stale_clobber",
            "max_attempts",
            "max_edit_retries",
            "max_failure_reads",
        ),
    ),
    (
        "summariser (compaction events)",
        (
            "retain_plan",
            "retain_task_invariant",
            "retain_invariant",
            "retain_fact",
            "retain_check",
            "p_verbatim",
        ),
    ),
    ("prefix cache (model_call usage)", ("cache_block_tokens", "cache_min_tokens", "cache_ttl_s")),
    (
        "latency (model_call timings)",
        (
            "latency_base_s",
            "latency_s_per_uncached_token",
            "latency_s_per_cached_token",
            "decode_s_per_token",
        ),
    ),
)


def _num(key: str, v: float) -> str:
    if key in INTS or (abs(v) >= 1000 and float(v).is_integer()):
        return str(int(round(v)))
    return f"{v:.4g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.4e}"


def comment(key: str, c: Calibration) -> str:
    e = c.estimates[key]
    if e.low is None or e.high is None:
        return e.source
    what = e.source.split("(", 1)[1].rstrip(")") if "(" in e.source else "observations"
    kind = e.source.split(" ", 1)[0] if e.source.startswith(("bracketed", "exact")) else "95%"
    if "at the lower bound" in e.source:  # the data wanted a value the simulator refuses
        kind = "AT THE LOWER BOUND 0; 95%"
    return f"{kind} [{_num(key, e.low)}, {_num(key, e.high)}], n={e.n} ({what}); prior {_num(key, float(c.prior[key]))}"


def git_sha() -> str:
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def yaml_text(c: Calibration, command: str, report: Path) -> str:
    models = sorted({str(t.get("model.model_id") or t.get("model.name") or "?") for t in c.trials})
    lines = [
        f"# model=sim_{c.name}: the simulated model fitted to {len(c.trials)} finished trials of "
        f"{', '.join(models)}",
        f"# by `{command}` on {dt.date.today().isoformat()} (code {git_sha()}).",
        '# Each fitted value carries its interval and the number of observations behind it; "prior" marks',
        f"# a value the logs could not inform, kept from {c.base}.yaml. Report: {report}",
        "# Meaning of every parameter: SimParams in bench/sim/params.py; how they were fitted: docs/calibration.md.",
        "defaults:",
        f"  - {c.base}",
        "  - _self_",
        "",
        f"name: sim_{c.name}",
        "params:",
    ]
    for title, keys in GROUPS:
        lines.append(f"  # --- {title}")
        for key in keys:
            if key in c.prior:
                lines.append(f"  {key}: {_num(key, c.value(key))}  # {comment(key, c)}")
    return "\n".join(lines) + "\n"


def fit_json(c: Calibration) -> dict[str, Any]:
    return {
        "name": c.name,
        "base": c.base,
        "trials": [t.name for t in c.trials],
        "crn_dedupe": c.deduped,
        "observations": {
            **(c.recall.n_obs if c.recall else {}),
            **{k: sum(1 for x in c.kept if x.kind == k) for k in {x.kind for x in c.kept}},
        },
        "model_calls": len(c.calls),
        "params": {
            k: {
                "value": e.value,
                "low": e.low,
                "high": e.high,
                "n": e.n,
                "source": e.source,
                "prior": c.prior.get(k),
            }
            for k, e in c.estimates.items()
        },
    }


def write(c: Calibration, conf_dir: Path, report_dir: Path, command: str) -> tuple[Path, Path]:
    conf_dir.mkdir(parents=True, exist_ok=True)
    report_dir.mkdir(parents=True, exist_ok=True)
    conf = conf_dir / f"sim_{c.name}.yaml"
    conf.write_text(yaml_text(c, command, report_dir / "fit.md"))
    (report_dir / "fit.json").write_text(json.dumps(fit_json(c), indent=1) + "\n")
    return conf, report_dir / "fit.json"
