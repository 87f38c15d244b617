"""A tiny plug-in package of a user's own, written to a temporary directory and installed
there with pip (`--target`), so a test can run a trial whose strategy, task family, provider
and sandbox all come from outside ctxbench (docs/plugins.md).

Two of the four are found by entry point (the package's `pyproject.toml` declares them), two
by a dotted path in the config; the package ships its own Hydra configs under `conf/`, which
a trial finds through `hydra.searchpath`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PACKAGE = "ctxbench_plugin_demo"

_PYPROJECT = f"""
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "ctxbench-plugin-demo"
version = "0.0.1"

[project.entry-points."ctxbench.strategies"]
recent = "{PACKAGE}.strategy:RecentStrategy"

[project.entry-points."ctxbench.task_families"]
tiny_extract = "{PACKAGE}.family:generate"

[tool.setuptools]
packages = ["{PACKAGE}"]

[tool.setuptools.package-data]
{PACKAGE} = ["conf/*/*.yaml"]
"""

_MODULES = {
    "__init__.py": '"""A user\'s own ctxbench plug-ins (a test fixture)."""\n',
    # A strategy with a knob of its own: the raw transcript, cut to its last `keep` turns.
    "strategy.py": """
        from dataclasses import dataclass

        from strategies import _common
        from strategies.base import Built, stable_prefix


        @dataclass(frozen=True)
        class RecentConfig:
            name: str = "recent"
            keep: int = 20

            def __post_init__(self):
                if self.keep < 2:
                    raise ValueError(f"strategy.keep must be >= 2, got {self.keep}")


        class RecentStrategy:
            name = "recent"
            config_class = RecentConfig
            requires_handoff = False
            fresh_session_per_step = False
            invariants_from = "model"

            def __init__(self, config=None):
                self.config = config or RecentConfig()

            def build(self, state):
                prefix = stable_prefix(state.task)
                turns = _common.groups(state.transcript)
                start = turns[-self.config.keep][0] if len(turns) > self.config.keep else 0
                body = state.transcript[start:]
                f = _common.fit(prefix, body, state.budget)
                return Built(messages=f.messages, stable=len(prefix), tokens=f.tokens,
                             dropped=f.dropped, tokens_before_drop=f.tokens_before_drop)

            def summary_request(self, state):
                raise RuntimeError("recent never compacts")
    """,
    # A family under its own name: extract_module's premises, re-labelled.
    "family.py": """
        import dataclasses

        from tasks import task_id
        from tasks.extract_module.plan import generate as _extract


        def generate(seed, **size):
            spec = _extract(seed, **size)
            return dataclasses.replace(spec, family="tiny_extract", task_id=task_id("tiny_extract", seed, **size))
    """,
    # A provider: the sim behind a wrapper that counts its calls in a file the test reads.
    "provider.py": """
        import os

        from bench.sim.provider import from_config as sim_from_config


        class CountingSim:
            def __init__(self, inner):
                self.inner = inner

            @classmethod
            def from_config(cls, cfg):
                return cls(sim_from_config({**cfg, "provider": "sim"}))

            def complete(self, *args, **kwargs):
                with open(os.environ["PLUGIN_CALLS"], "a") as f:
                    f.write("call\\n")
                return self.inner.complete(*args, **kwargs)

            def __getattr__(self, name):
                return getattr(self.inner, name)
    """,
    # A sandbox backend: the local one, saying that it was chosen.
    "sandbox.py": """
        import os

        from bench.sandbox.local import create as _local


        def create(cfg, files, trial_id, labels):
            with open(os.environ["PLUGIN_CALLS"], "a") as f:
                f.write("sandbox\\n")
            return _local(cfg, files, trial_id, labels)
    """,
}

_CONFS = {
    "strategy/recent.yaml": "name: recent\nkeep: 12\n",
    "task/tiny_extract.yaml": "family: tiny_extract\nseed: 0\nsize:\n  steps: 6\n",
    "model/counting.yaml": f"defaults:\n  - sim\n  - _self_\nprovider: {PACKAGE}.provider:CountingSim\n",
    "sandbox/plugged.yaml": f"defaults:\n  - local\n  - _self_\nkind: {PACKAGE}.sandbox:create\n",
}


def install(root: Path) -> Path:
    """Write the package's source under `root/src`, pip-install it into `root/site`; return
    the site directory (put it on PYTHONPATH). The configs are in `site/<PACKAGE>/conf`."""
    src = root / "src"
    pkg = src / PACKAGE
    for name, body in _MODULES.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(textwrap.dedent(body).lstrip())
    for name, body in _CONFS.items():
        (pkg / "conf" / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / "conf" / name).write_text(body)
    (src / "pyproject.toml").write_text(_PYPROJECT.lstrip())
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--target",
            str(site),
            str(src),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return site
