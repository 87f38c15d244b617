"""Open plug-ins (docs/plugins.md): a strategy, task family, provider and sandbox from a package
of the user's own, installed with pip, chosen by entry point or by dotted path, with the same
validation and one-line errors as the built-in ones; and a whole trial run with all four."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.config import ROOT
from bench.core.registry import Registry, UnknownChoice
from tests.helpers import plugin_package


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    return plugin_package.install(tmp_path_factory.mktemp("plugin"))


def _in_plugin_env(code: str, site: Path) -> str:
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_a_dotted_path_loads_and_a_bad_one_is_one_line():
    reg = Registry("thing.kind", {"a": "json:dumps"})
    assert reg.load("json:loads")("[1]") == [1]
    assert reg.load("os.path:join")("a", "b") == os.path.join("a", "b")
    for bad, says in [
        ("nosuchpkg_xyz.mod:thing", "cannot import 'nosuchpkg_xyz.mod'"),
        ("json:no_such_attr", "has no attribute 'no_such_attr'"),
        ("not a path", "nor a 'package.module:attribute' path"),
    ]:
        with pytest.raises(UnknownChoice) as err:
            reg.load(bad)
        assert "\n" not in str(err.value) and str(err.value).startswith(f"thing.kind={bad!r}")
        assert says in str(err.value)


def test_entry_points_of_an_installed_package_are_choices(plugin_site):
    out = _in_plugin_env(
        "from strategies import STRATEGIES\nfrom tasks import FAMILIES, generate\n"
        "print(STRATEGIES.load('recent').__name__, STRATEGIES.plugins()['recent'])\n"
        "spec = generate('tiny_extract', 3, steps=6)\n"
        "print(spec.family, spec.task_id, len(spec.steps))\n"
        "try:\n    STRATEGIES.load('nope')\nexcept ValueError as e:\n    print(e)\n",
        plugin_site,
    )
    first, second, error = out.splitlines()
    assert first == f"RecentStrategy {plugin_package.PACKAGE}.strategy:RecentStrategy"
    assert second == "tiny_extract tiny_extract/3/steps=6 6"
    # The one-line error names the installed plug-ins beside the built-in choices.
    assert error.startswith("strategy.name='nope' is not one of raw, ") and "plug-in (recent)" in error


def test_a_plugin_strategy_is_validated_like_a_built_in(plugin_site):
    out = _in_plugin_env(
        "from strategies import make_strategy\n"
        "for cfg in ({'name': 'recent', 'keep': 1}, {'name': 'recent', 'kep': 3}):\n"
        "    try:\n        make_strategy(cfg)\n    except ValueError as e:\n        print(e)\n",
        plugin_site,
    )
    keep, typo = out.splitlines()
    assert keep == "strategy.keep must be >= 2, got 1"
    assert (
        typo == "strategy.kep: unknown key 'kep' in conf/strategy/recent.yaml or the command line; "
        "known keys: keep, name"
    )


def test_a_trial_runs_with_a_plugin_strategy_family_provider_and_sandbox(plugin_site, tmp_path):
    calls = tmp_path / "calls.txt"
    results = tmp_path / "results"
    conf = plugin_site / plugin_package.PACKAGE / "conf"
    env = {
        **os.environ,
        "PYTHONPATH": str(plugin_site),
        "CTXBENCH_RESULTS": str(results),
        "PLUGIN_CALLS": str(calls),
    }
    cmd = [
        sys.executable,
        "-m",
        "bench",
        f"hydra.searchpath=[file://{conf}]",
        "strategy=recent",
        "task=tiny_extract",
        "task.seed=2",
        "model=counting",
        "sandbox=plugged",
        "arm=baseline",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]

    (log,) = (results / "trials").glob("*/events.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    start = next(e for e in events if e["kind"] == "trial_start")
    end = events[-1]
    assert start["strategy"] == "recent" and start["task_id"] == "tiny_extract/2/steps=6"
    assert end["kind"] == "trial_end" and end["status"] in ("success", "failure")
    # The plug-in provider answered every model call and the plug-in sandbox was the one made.
    seen = calls.read_text().splitlines()
    model_calls = [e for e in events if e["kind"] == "model_call"]
    assert seen.count("sandbox") == 1 and seen.count("call") == len(model_calls) > 0

    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{results}/mlflow.db")
    (run,) = client.search_runs(client.get_experiment_by_name("ctxbench").experiment_id)
    assert run.data.params["strategy.keep"] == "12" and run.data.params["strategy.name"] == "recent"
    assert run.data.params["model.provider"] == f"{plugin_package.PACKAGE}.provider:CountingSim"
    assert run.info.status == "FINISHED"
