"""Every config option composes and is instantiated by the component that owns it (a new file in\na group without an instantiating test here fails `test_every_*_option_is_listed_here`)."""

from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

import tasks
from bench.config import CONF_DIR, ROOT, ConfigError, compose, load
from bench.core.knobs import defaults
from bench.providers import make_provider
from bench.providers.http.config import Transport
from bench.sandbox.base import SandboxConfig
from strategies import make_strategy


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def test_defaults_compose_to_the_documented_trial():
    cfg = load(compose())
    assert (cfg.strategy["name"], cfg.arm.name, cfg.model["name"], cfg.sandbox["kind"]) == (
        "ledger",
        "baseline",
        "sim",
        "docker",
    )
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


def test_task_size_is_validated_at_load_by_the_familys_schema():
    """conf/task/<family>.yaml extends the family's Size (tasks/common/size.py): the loaded task
    carries its knobs; null callers stays the family's default, drawn by seed."""
    cfg = load(compose(["task=extract_module", "task.size.steps=8.0"]))
    assert cfg.task.size == (("filler", 6), ("steps", 8))  # a whole float is that int
    assert load(compose(["task.size.callers=64"])).task.size == (
        ("callers", 64),
        ("filler", 5),
        ("steps", 12),
    )
    assert (
        "callers" not in dict(cfg.task.size)
        and len(tasks.generate("extract_module", 0, **dict(cfg.task.size)).steps) == 8
    )


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("task.size.steps=5", "task.size.steps: Input should be greater than or equal to 6, got 5"),
        ("task.size.steps=17", "task.size.steps: Input should be less than or equal to 16, got 17"),
        ("task.size.steps=true", "task.size.steps: Input should be a valid integer, got True"),
        ("task.size.callers=0", "task.size.callers: Input should be greater than or equal to 1, got 0"),
        ("task.size.callers=65", "task.size.callers: Input should be less than or equal to 64, got 65"),
        ("task.size.callers=6", "task.size.callers: must be >= 7 (one module per batch at steps=12), got 6"),
        ("task.size.filler=-1", "task.size.filler: Input should be greater than or equal to 0, got -1"),
        ("task.size.filler=11", "task.size.filler: Input should be less than or equal to 10, got 11"),
        (
            "task.size.filler=many",
            "task.size.filler: Input should be a valid integer, got 'many'",
        ),
    ],
)
def test_a_bad_task_size_is_one_line_naming_the_key(override, line):
    with pytest.raises(ConfigError) as e:
        load(compose([override]))
    assert str(e.value).startswith(line) and "\n" not in str(e.value)
    assert str(e.value).endswith("fix it in conf/task/signature_migration.yaml or the command line")


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ("task.seed=-1", "task.seed: Input should be greater than or equal to 0, got -1; fix it in "),
        ("task.seed=true", "task.seed: Input should be a valid integer, got True; fix it in "),
        ("task.seed=null", "task.seed: missing; set it in "),
        ("+task.sed=3", "task.sed: unknown key 'sed' in "),
    ],
)
def test_a_bad_task_seed_or_key_is_one_line_naming_the_key(override, line):
    with pytest.raises(ConfigError) as e:
        load(compose([override]))
    assert str(e.value).startswith(line + "conf/task/signature_migration.yaml or the command line")


def test_an_unknown_task_size_knob_names_the_known_ones():
    with pytest.raises(ConfigError) as e:
        load(compose(["task=batch_writes", "+task.size.colour=1"]))
    assert str(e.value) == (
        "task.size.colour: unknown key 'colour' in conf/task/batch_writes.yaml or the command line; "
        "known keys: callers, filler, steps"
    )


@pytest.mark.parametrize("name", options("sandbox"))
def test_every_sandbox_option_validates(name):
    cfg = load(compose([f"sandbox={name}"]))
    assert SandboxConfig.from_dict(cfg.sandbox).kind == name


# What each model option needs from outside the config to be built, and the class it builds.
MODELS = {
    "sim": ([], "SimProvider"),
    "oracle": ([], "SimProvider"),
    "anthropic": ([], "AnthropicProvider"),
    "openai": ([], "OpenAIProvider"),
    "deepseek": ([], "OpenAIProvider"),
    "local": (["model.model_id=qwen3-coder"], "OpenAIProvider"),
    "replay": (["model.cassette={cassette}"], "ReplayProvider"),
    "adversary": ([], "ScriptedProvider"),
    "smollm2": ([], "OpenAIProvider"),
}


def test_every_model_option_is_listed_here():
    assert sorted(MODELS) == options("model")


@pytest.mark.usefixtures("api_keys")
@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_option_instantiates(name, tmp_path):
    (tmp_path / "cassette.jsonl").write_text("")
    extra, cls = MODELS[name]
    model = load(
        compose([f"model={name}", *(o.format(cassette=tmp_path / "cassette.jsonl") for o in extra)])
    ).model
    if extra:  # what the option leaves for the command line is named when missing
        with pytest.raises(ValueError, match=extra[0].split("=")[0]):
            make_provider(load(compose([f"model={name}"])).model)
    provider = make_provider(model)
    assert type(provider).__name__ == cls and provider.model_id
    provider.close()


@pytest.mark.parametrize("name", ["anthropic", "openai", "deepseek", "local", "replay"])
def test_real_models_extend_the_transport_base_and_state_only_what_differs(name):
    own = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "model" / f"{name}.yaml"))
    base = defaults(Transport)
    assert isinstance(own, dict)
    assert own.pop("defaults") == ["/knobs/model/transport@_here_", "_self_"]
    repeated = sorted(k for k in own if k in base and own[k] == base[k])
    assert not repeated, f"{name}.yaml repeats the transport base's {repeated}"
    assert set(load(compose([f"model={name}"])).model) >= set(base)


@pytest.mark.parametrize("name", options("tracking"))
def test_every_tracking_option_validates(name):
    assert load(compose([f"tracking={name}"])).tracking.uri.startswith("sqlite:///")


def test_the_blob_threshold_is_validated_and_changes_no_config_hash():
    """tracking.blob_chars (how the event log stores large values: ctxlog/blobs.py)."""
    plain = load(compose())
    assert plain.tracking.blob_chars == 262144
    never = load(compose(["tracking.blob_chars=0"]))
    assert never.tracking.blob_chars == 0 and never.config_hash == plain.config_hash
    for bad in ("-5", "big", "true", "2.5"):
        with pytest.raises(ConfigError, match="tracking.blob_chars"):
            load(compose([f"tracking.blob_chars={bad}"]))


def test_task_kept_is_validated_on_in_the_grid_and_changes_no_config_hash():
    """task.kept (tasks and answers kept per process: bench/accel/kept_tasks.py)."""
    plain, kept = load(compose()), load(compose(["task.kept=true"]))
    assert plain.task.kept is False and kept.task.kept is True
    assert kept.config_hash == plain.config_hash
    grid = ["experiment=grid", "strategy=raw", "arm=baseline", "task=config_rename"]
    assert load(compose(grid)).task.kept is True
    assert load(compose([*grid, "task.kept=false"])).config_hash == load(compose(grid)).config_hash
    for bad in ("yes", "1", "maybe"):
        with pytest.raises(ConfigError, match="task.kept: Input should be a valid boolean, got "):
            load(compose([f"task.kept={bad}"]))


@pytest.mark.parametrize(
    "over,match",
    [
        ("model.tool_calls=json", "model.tool_calls: Input should be 'native' or 'grammar', got 'json'"),
        ("model.stream=maybe", "model.stream: Input should be a valid boolean, got 'maybe'"),
    ],
)
def test_the_small_model_options_are_validated(over, match):
    with pytest.raises(ValueError, match=match):
        make_provider(load(compose(["model=smollm2", over])).model)


def test_the_small_model_options_reach_the_provider_and_the_config_hash():
    plain = load(compose(["model=smollm2"]))
    assert make_provider(plain.model).settings.tool_calls == "grammar"  # type: ignore[attr-defined]
    native = load(compose(["model=smollm2", "model.tool_calls=native", "model.stream=false"]))
    provider = make_provider(native.model)
    assert (provider.settings.tool_calls, provider.settings.stream) == ("native", False)  # type: ignore[attr-defined]
    assert native.config_hash != plain.config_hash  # a different way of calling is a different trial


def test_the_loopback_server_composes_model_files_that_extend_others():
    from bench.serve.backend import load_model_config

    oracle = load_model_config(CONF_DIR / "model" / "oracle.yaml")
    assert oracle == dict(load(compose(["model=oracle"])).model)


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


def _compose_hydra(overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose(config_name="config", overrides=overrides, return_hydra_config=True)


# The Hydra plugin each launcher option extends; Ray and SLURM are optional extras.
LAUNCHER_PLUGINS = {
    "ctxbench_joblib": "hydra_plugins.hydra_joblib_launcher",
    "ctxbench_threads": "hydra_plugins.ctxbench_threads",
    "ctxbench_ray": "hydra_plugins.hydra_ray_launcher",
    "ctxbench_slurm": "hydra_plugins.hydra_submitit_launcher",
}


@pytest.mark.parametrize("name", options("hydra/launcher"))
def test_every_launcher_option_composes(name):
    if name not in ("ctxbench_joblib", "ctxbench_threads"):  # core (joblib) or ours: never skipped
        pytest.importorskip(
            LAUNCHER_PLUGINS[name], reason=f"{name} needs its optional extra (docs/scaling.md)"
        )
    cfg = _compose_hydra([f"hydra/launcher={name}"])
    assert cfg.hydra.launcher._target_.startswith("hydra_plugins.")
    if name == "ctxbench_threads":  # ours is instantiated too (the others need their plugin's config schema)
        from hydra.utils import instantiate

        assert instantiate(cfg.hydra.launcher).n_jobs == 128


@pytest.mark.parametrize("name", options("hydra/callbacks"))
def test_every_callbacks_option_instantiates(name):
    from hydra.utils import instantiate

    callbacks = _compose_hydra([f"hydra/callbacks={name}"]).hydra.callbacks
    assert callbacks and all(instantiate(c) is not None for c in callbacks.values())


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
    assert (
        load(compose(["study.sample=selected", "study.sample_note=x"])).config_hash
        == load(compose()).config_hash
    )


@pytest.mark.parametrize(("group", "schema"), [("arm", "ArmConfig"), ("tracking", "TrackingConfig")])
def test_arm_and_tracking_yaml_restate_no_default_of_their_schema(group, schema):
    import bench.config
    from bench.core.knobs import defaults

    stated_defaults = defaults(getattr(bench.config, schema))
    for name in options(group):
        own = OmegaConf.to_container(OmegaConf.load(CONF_DIR / group / f"{name}.yaml"))
        assert isinstance(own, dict) and own.pop("defaults") == [f"/knobs/{group}@_here_", "_self_"]
        assert not {k for k, v in own.items() if k in stated_defaults and stated_defaults[k] == v}, name


def test_the_arms_are_the_options_in_conf_arm():
    from bench.config import ARMS

    assert ARMS == tuple(options("arm")) == ("baseline", "compaction", "drift", "drift_compaction")


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (
            "arm.window=10",
            "arm.window: Input should be greater than or equal to 2048, got 10; fix it in "
            "conf/arm/baseline.yaml or the command line",
        ),
        (
            "arm.drift=1",
            "arm.drift: Input should be a valid boolean, got 1; fix it in conf/arm/baseline.yaml or the command line",
        ),
        (
            "arm.drift_kinds=[new_caller,typo]",
            "arm.drift_kinds: unknown kind 'typo'; kinds: new_caller, changed_value, "
            "rename_helper, tool_change, new_trap, got ['new_caller', 'typo']; fix it in "
            "conf/arm/baseline.yaml or the command line",
        ),
        (
            "arm.name=sideways",
            "arm.name: must be one of baseline, compaction, drift, drift_compaction (the options in "
            "conf/arm/), got 'sideways'; fix it in conf/arm/sideways.yaml or the command line",
        ),
        (
            "limits.max_turns=0",
            "limits.max_turns: Input should be greater than or equal to 1, got 0; fix it in "
            "conf/config.yaml or the command line",
        ),
        (
            "tracking.tracing=maybe",
            "tracking.tracing: Input should be a valid boolean, got 'maybe'; fix it in "
            "conf/tracking/ or the command line",
        ),
        (
            "+arm.windw=9000",
            "arm.windw: unknown key 'windw' in conf/arm/baseline.yaml or the command line; known keys: "
            "drift, drift_kinds, name, window",
        ),
    ],
)
def test_a_bad_arm_limit_or_tracking_value_is_one_line_naming_the_key(override, line):
    with pytest.raises(ConfigError) as e:
        load(compose([override]))
    assert str(e.value) == line


def test_every_arm_tracking_and_limits_knob_has_a_one_line_doc_and_a_single_drift_kind_is_a_list():
    from bench.config import ArmConfig, Limits, TrackingConfig

    for schema in (ArmConfig, Limits, TrackingConfig):
        for key, field in schema.model_fields.items():
            assert field.description and "\n" not in field.description, key
    assert load(compose(["arm.drift_kinds=new_trap"])).arm.drift_kinds == ("new_trap",)
    assert load(compose(["limits.trial_timeout_s=30"])).limits.trial_timeout_s == 30.0


@pytest.mark.parametrize("name", options("level"))
def test_each_level_picks_who_plays_and_nothing_else(name):
    """conf/level/ (experiment=agents): a level is an external agent or the own loop with one
    strategy, and its trial is the one `agent=` or `strategy=` gives, hash and all."""
    agent = name in ("claude_code", "mini_swe_agent", "codex")
    cfg = load(compose([f"+level={name}"]))
    plain = load(compose([f"agent={name}"] if agent else [f"strategy={name}"]))
    assert cfg.level == name and cfg.config_hash == plain.config_hash
    mine = dict(cfg.resolved)
    if not agent:  # the own loop is picked by name (agent=own), which the hash leaves out (bench/config.py)
        assert mine.pop("agent") == {"name": "own"}
    assert mine == dict(plain.resolved)


def test_composing_a_config_loads_no_familys_code_and_no_attack_script():
    """Every family's size schema and the adversary's are registered wherever a config is composed:
    that must not pull each family's generator and every attack script onto the reference path."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from bench import config\n"
        "config.compose(['task=extract_module', 'model=adversary'])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('tasks.', 'bench.providers.attacks'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    loaded = eval(out.strip().splitlines()[-1])
    assert "tasks.extract_module" in loaded  # its Size, so the composition did read the family
    heavy = [m for m in loaded if m.startswith("bench.providers.attacks") or m.endswith(".plan")]
    assert heavy == [], heavy
    assert {m.split(".")[1] for m in loaded if m.count(".") >= 2} <= {"common"}, loaded
