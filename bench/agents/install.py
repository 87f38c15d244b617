"""Install an agent once per machine into a cache outside the repository, from its registry by
name, and find it again at run time (never installed at run time).

    python -m bench.agents.install mini_swe_agent claude_code    # scripts/ensure_agents.sh

The cache is `$CTXBENCH_AGENTS` or `~/.cache/ctxbench/agents`, one folder per `<name>-<version>`
with a `.ctxbench-installed` stamp written last, so a broken install is redone, a finished one
is reused. An agent not installed, or installed at another version, is one line saying the
command that installs it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench.agents.spec import AgentSpec
from bench.config import ConfigError

STAMP = ".ctxbench-installed"


def cache_root() -> Path:
    return Path(os.environ.get("CTXBENCH_AGENTS") or Path.home() / ".cache" / "ctxbench" / "agents")


def installed(spec: AgentSpec, root: Path | None = None) -> Path:
    """The agent's executable in the cache, or ConfigError naming how to install it."""
    assert spec.install is not None, "agent=own installs nothing"
    root = root or cache_root()
    here = spec.cache_dir(root)
    stamp = here / STAMP
    if not stamp.exists():
        others = (
            sorted(p.name for p in root.glob(f"{spec.name}-*") if (p / STAMP).exists())
            if root.exists()
            else []
        )
        also = (
            (
                f" (the cache has {', '.join(others)}, not {spec.version}: agent.version="
                f"{others[-1].removeprefix(spec.name + '-')} uses it)"
            )
            if others
            else ""
        )
        raise ConfigError(
            f"agent {spec.name} {spec.version} is not installed in {root}{also}; "
            f"run scripts/ensure_agents.sh {spec.name}"
        )
    exe = here / spec.install.bin
    if not exe.exists():
        raise ConfigError(
            f"agent {spec.name}: {exe} is missing from its install; remove {here} and run "
            f"scripts/ensure_agents.sh {spec.name}"
        )
    found = installed_version(spec, here)
    if found != spec.version:  # the install was changed in place (a pip or npm upgrade inside it)
        raise ConfigError(
            f"agent {spec.name}: {here} holds {spec.install.package} {found or '(none)'}, not "
            f"{spec.version}; remove {here} and run scripts/ensure_agents.sh {spec.name}"
        )
    return exe


def installed_version(spec: AgentSpec, here: Path) -> str:
    """The package's version as its install records it (the registry's own metadata, read from
    disk: no process started): a PyPI package's dist-info, an npm package's package.json."""
    assert spec.install is not None
    pkg = spec.install.package
    if spec.install.registry == "pypi":
        name = re.sub(r"[-_.]+", "_", pkg).lower()
        found = sorted(
            p.name
            for p in here.glob("venv/lib/python*/site-packages/*.dist-info")
            if p.name.lower().startswith(name + "-")
        )
        return found[0][len(name) + 1 : -len(".dist-info")] if len(found) == 1 else ""
    try:
        return str(
            json.loads((here / "node_modules" / pkg / "package.json").read_text()).get("version") or ""
        )
    except (OSError, ValueError):
        return ""


def install(spec: AgentSpec, root: Path | None = None) -> Path:
    """Install (idempotent): nothing happens when the stamp is there."""
    assert spec.install is not None, "agent=own installs nothing"
    root = root or cache_root()
    here = spec.cache_dir(root)
    if (here / STAMP).exists():
        return here
    shutil.rmtree(here, ignore_errors=True)  # a half-finished install is redone from scratch
    here.mkdir(parents=True)
    pkg = spec.install
    if pkg.registry == "pypi":
        subprocess.run([pkg.python or sys.executable, "-m", "venv", str(here / "venv")], check=True)
        subprocess.run(
            [
                str(here / "venv" / "bin" / "pip"),
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"{pkg.package}=={spec.version}",
            ],
            check=True,
        )
    else:
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(here),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"{pkg.package}@{spec.version}",
            ],
            check=True,
        )
    (here / STAMP).write_text(f"{pkg.registry} {pkg.package} {spec.version}\n")
    return here


def spec_named(name: str) -> AgentSpec:
    from omegaconf import OmegaConf

    from bench.config import compose

    try:
        cfg = compose([f"agent={name}"]).agent
    except Exception as exc:  # Hydra's "could not find agent/x"
        raise ConfigError(
            f"agent={name!r} is not an agent of conf/agent/; choose one of {', '.join(names())}"
        ) from exc
    return AgentSpec.from_dict(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]


def names() -> list[str]:
    from bench.config import CONF_DIR

    return sorted(p.stem for p in (CONF_DIR / "agent").glob("*.yaml"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.agents.install", description=__doc__)
    ap.add_argument("agents", nargs="+", help="agent names (conf/agent/)")
    args = ap.parse_args(argv)
    for name in args.agents:
        try:
            spec = spec_named(name)
        except ConfigError as exc:
            print(exc, file=sys.stderr)
            return 2
        if spec.own:
            continue
        print(f"{spec.name} {spec.version}: {install(spec)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
