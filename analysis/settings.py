"""The analysis's settings, read from the project's Hydra config: the one module that does.

Every command (`python -m analysis.<room>`) takes its defaults from `defaults()`; it sits on
the ground floor of `analysis/` so that any room can read it without importing the report.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def defaults(conf_dir: Path = REPO / "conf") -> dict[str, str | None]:
    out: dict[str, str | None] = {
        "tracking.uri": f"sqlite:///{REPO / 'results' / 'mlflow.db'}", "tracking.experiment": "ctxbench",
        "study.name": None, "report.dir": str(REPO / "results" / "report"), "report.reference": "raw",
        "report.reference_arm": "baseline", "report.mlflow": "true", "report.divergence": "outcome"}
    out.update(_from_hydra(conf_dir))
    return out


def _from_hydra(conf_dir: Path) -> dict[str, str]:
    """tracking.* (and the report dir under results_dir) from the project's Hydra config
    when it composes; {} otherwise.

    The report must keep working while that config changes under it, so any failure
    to compose or resolve falls back to the built-in defaults.
    """
    if not (conf_dir / "config.yaml").is_file():
        return {}
    try:
        from hydra import compose, initialize_config_dir
        from omegaconf import OmegaConf

        if not OmegaConf.has_resolver("ctxbench_root"):
            # Same meaning as the harness's resolver (the project root), which analysis
            # cannot import: paths in the config are rooted there, never at the cwd.
            OmegaConf.register_new_resolver("ctxbench_root", lambda: str(REPO))
        with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
            cfg = compose(config_name="config")
        found = {}
        for key in ("tracking.uri", "tracking.experiment", "results_dir"):
            value = OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)
            if isinstance(value, str) and value:
                found[key] = value
        if "results_dir" in found:
            found["report.dir"] = str(Path(found.pop("results_dir")) / "report")
    except Exception:
        return {}
    uri = found.get("tracking.uri", "")
    # A relative sqlite path in the project config means relative to the repo, not the cwd.
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        found["tracking.uri"] = f"sqlite:///{REPO / uri[len('sqlite:///'):]}"
    return found
