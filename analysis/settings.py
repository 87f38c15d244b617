"""The analysis's settings, read from the project's Hydra config: the one module that does.

Every command (`python -m analysis.<room>`) takes its defaults from `defaults()`; it sits on
the ground floor of `analysis/` so that any room can read it without importing the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


# The analysis's own knobs. tracking.* and where the report goes are the harness's, read from
# the composed config (conf/tracking/, results_dir), never restated here.
REPORT = {
    "study.name": None,
    "report.reference": "raw",
    "report.reference_arm": "baseline",
    "report.mlflow": "true",
    "report.divergence": "outcome",
}


class SettingsError(ValueError):
    """The project's config cannot give the analysis its settings; the message says why."""


def defaults(conf_dir: Path = REPO / "conf") -> dict[str, str | None]:
    return {**_from_hydra(conf_dir), **REPORT}


def _from_hydra(conf_dir: Path) -> dict[str, str]:
    """tracking.uri, tracking.experiment and the report dir (under results_dir) from the project's
    Hydra config. A config that does not compose is an error of one line, not a silent default."""
    if not (conf_dir / "config.yaml").is_file():
        raise SettingsError(
            f"{conf_dir}/config.yaml is missing: the analysis reads tracking.* and results_dir "
            "from the project's config; run it from a ctxbench checkout"
        )
    try:
        cfg = _compose(conf_dir, [])
        found = {key: _select(cfg, key) for key in ("tracking.uri", "tracking.experiment", "results_dir")}
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SettingsError(
            f"{conf_dir} does not compose ({first}); fix it, `python -m bench --cfg job` shows the same error"
        ) from None
    missing = [key for key, value in found.items() if not isinstance(value, str) or not value]
    if missing:
        raise SettingsError(
            f"{missing[0]} is not set in {conf_dir}: the analysis needs it (conf/tracking/, config.yaml)"
        )
    found["report.dir"] = str(Path(str(found.pop("results_dir"))) / "report")
    uri = str(found["tracking.uri"])
    # A relative sqlite path in the project config means relative to the repo, not the cwd.
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        found["tracking.uri"] = f"sqlite:///{REPO / uri[len('sqlite:///') :]}"
    return {k: str(v) for k, v in found.items()}


def model_group(name: str, conf_dir: Path = REPO / "conf") -> dict[str, Any]:
    """`model=<name>` as the harness composes it (the schema's defaults merged under the YAML's,
    bench/sim/params.py), as plain data: what analysis.calibrate starts a calibration from."""
    from omegaconf import OmegaConf

    if not (conf_dir / "model" / f"{name}.yaml").is_file():
        raise SettingsError(f"no model config {conf_dir / 'model' / name}.yaml: choose one of conf/model/")
    try:
        out = OmegaConf.to_container(_compose(conf_dir, [f"model={name}"]).model, resolve=True)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SettingsError(
            f"model={name} does not compose ({first}); `python -m bench model={name} --cfg job` "
            "shows the same error"
        ) from None
    assert isinstance(out, dict)
    return {str(k): v for k, v in out.items()}


def _compose(conf_dir: Path, overrides: list[str]) -> Any:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("ctxbench_root"):
        # Same meaning as the harness's resolver (the project root), which analysis
        # cannot import: paths in the config are rooted there, never at the cwd.
        OmegaConf.register_new_resolver("ctxbench_root", lambda: str(REPO))
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def _select(cfg: Any, key: str) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.select(cfg, key, default=None)
