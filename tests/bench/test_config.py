"""Every config option composes and is instantiated by the component that owns it."""

from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import tasks
from bench.config import CONF_DIR, ROOT, ConfigError, compose, load
from bench.providers import make_provider
from bench.sandbox.base import SandboxConfig
from strategies import make_strategy


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def test_defaults_compose_to_the_documented_trial():
    cfg = load(compose())
    assert (cfg.strategy["name"], cfg.arm.name, cfg.model["name"], cfg.sandbox["kind"]) == \
        ("ledger", "baseline", "sim", "docker")
    assert cfg.tracking.uri.startswith("sqlite:///") and Path(cfg.tracking.uri[10:]).is_absolute()
    assert cfg.results_dir.is_absolute()
    assert cfg.run_name == "ledger·baseline·signature_migration#0·rep0"


def test_results_dir_does_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("CTXBENCH_RESULTS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert load(compose()).results_dir == ROOT / "results"


@pytest.mark.parametrize("name", options("strategy"))
def test_every_strategy_option_instantiates(name):
    cfg = load(compose([f"strategy={name}"]))
    assert make_strategy(cfg.strategy).name == name


@pytest.mark.parametrize("name", options("arm"))
def test_every_arm_option_validates(name):
    arm = load(compose([f"arm={name}"])).arm
    assert arm.name == name
    assert arm.drift == ("drift" in name)
    assert (arm.window is not None) == ("compaction" in name)


@pytest.mark.parametrize("name", options("task"))
def test_every_task_option_generates(name):
    cfg = load(compose([f"task={name}"]))
    spec = tasks.generate(cfg.task.family, cfg.task.seed, **dict(cfg.task.size))
    assert spec.family == name and len(spec.steps) >= 6


@pytest.mark.parametrize("name", options("sandbox"))
def test_every_sandbox_option_validates(name):
    cfg = load(compose([f"sandbox={name}"]))
    assert SandboxConfig.from_dict(cfg.sandbox).kind == name


@pytest.mark.parametrize("name", [n for n in options("model") if n in ("sim", "oracle")])
def test_offline_models_instantiate(name):
    provider = make_provider(load(compose([f"model={name}"])).model)
    assert provider.model_id
    provider.close()


@pytest.mark.parametrize("name", options("experiment"))
def test_every_experiment_composes(name):
    cfg = compose([f"experiment={name}"])
    assert cfg.study.name == name


def test_a_wrong_choice_gets_hydras_error():
    with pytest.raises(ConfigCompositionException, match="strategy"):
        compose(["strategy=nonesuch"])


def test_bad_values_name_the_key():
    with pytest.raises(ConfigError, match="task.seed"):
        load(compose(["task.seed=-1"]))
    with pytest.raises(ConfigError, match="arm.window"):
        load(compose(["arm.window=10"]))
    with pytest.raises(ConfigError, match="file store"):
        load(compose(["tracking.uri=/tmp/mlruns"]))


def test_config_hash_ignores_where_results_go_but_not_what_runs():
    a = load(compose())
    b = load(compose(["tracking.experiment=other", "study.name=x"]))
    c = load(compose(["rep=1"]))
    assert a.config_hash == b.config_hash != c.config_hash
    assert OmegaConf.create(dict(a.resolved))  # the resolved config is plain data


def test_study_sample_is_validated_with_one_line_naming_the_key():
    assert load(compose()).sample == {"study.sample": "unbiased", "study.sample_note": ""}
    demo = load(compose(["experiment=demo"])).sample
    assert demo["study.sample"] == "selected" and "seed (4)" in demo["study.sample_note"]
    with pytest.raises(ConfigError, match=r"study\.sample='cherry' is not one of unbiased, selected"):
        load(compose(["study.sample=cherry"]))
    with pytest.raises(ConfigError, match=r"study\.sample=selected needs study\.sample_note"):
        load(compose(["study.sample=selected"]))
    picked = load(compose(["study.sample=selected", "study.sample_note='seeds  3 and 7,  the hard ones '"]))
    assert picked.sample["study.sample_note"] == "seeds 3 and 7, the hard ones"
    assert load(compose(["study.sample=selected", "study.sample_note=x"])).config_hash == load(compose()).config_hash
