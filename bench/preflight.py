"""Bad input is one clear line, before anything exists (docs/threat_model.md, "bad input").

`python -m bench ...` calls `check(argv)` before Hydra starts: Hydra creates its run or sweep
folder (and `.hydra/`) under results_dir before our code runs, so validation has to come
first. For every value of every swept key (each with the first value of the others; a plain
run is one job) it composes the config and builds the trial's parts as the runner would
(config, task, strategy, sandbox and model groups, the API key); then it checks that the
tracking store and, when a job uses it, the Docker engine and the sandbox image answer. The
first problem prints one line naming the key and what is allowed, and exits with status 2:
no results folder, no MLflow run, no container. A combination that is wrong only together
(two sweeps at their later values) is caught when its trial starts.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from bench.config import ConfigError, TrialConfig, compose, load
from bench.trial.runner import prepare

EXIT_BAD_INPUT = 2


class BadInput(ValueError):
    """The command line cannot run; the message is the one line the user sees."""


def check(argv: list[str]) -> None:
    """Exit 2 with one line on stderr if the command line cannot run; return if it can."""
    args = [a for a in argv if a not in ("-m", "--multirun")]
    if any(a.startswith("-") for a in args):  # Hydra's own flags (--help, --cfg, ...): Hydra's to handle
        return
    try:
        jobs = plan(args, multirun=len(args) != len(argv))
        trials = []
        for job in jobs:
            try:
                trials.append(validate(job))
            except BadInput as exc:
                raise BadInput(f"{exc} (in the job {' '.join(job)})" if len(jobs) > 1 else str(exc)) from exc
        reachable(trials)
    except BadInput as exc:
        print(f"ctxbench: bad input: {exc}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def _line(exc: BaseException) -> str:
    """An exception as one line (Hydra's messages span several)."""
    text = f"{exc}\n{exc.__cause__ or ''}".strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    options = re.search(r"Available options in '[^']+':\s*(.*?)(?:\n\s*\n|Config search path|$)", text, re.S)
    if options:
        first += f" (allowed: {', '.join(options.group(1).split())})"
    missing = re.search(r"Could not override '([^']+)'", text)
    if missing and "not in struct" in text:
        parent, _, key = missing.group(1).rpartition(".")
        node = OmegaConf.select(compose([]), parent) if parent else None
        allowed = f"; allowed keys: {', '.join(map(str, node))}" if node is not None and hasattr(node, "keys") else ""
        first = f"{missing.group(1)}: no such key{allowed} (add a new key with +{missing.group(1)}=...)"
    return " ".join(first.split())


def plan(overrides: list[str], multirun: bool) -> list[list[str]]:
    """The jobs to validate: one per value of each swept key, the others at their first value."""
    parser = OverridesParser.create()
    try:
        parsed = parser.parse_overrides(overrides)
        first = [f"{o.get_key_element()}={next(iter(o.sweep_string_iterator()))}" if o.is_sweep_override()
                 else str(o.input_line) for o in parsed]
        base = compose(first, return_hydra_config=True)
        mode = OmegaConf.select(base, "hydra.mode")
        if multirun or str(mode).endswith("MULTIRUN"):
            swept = base.hydra.sweeper.get("params")
            params = OmegaConf.to_container(swept, resolve=False) if swept else {}
            assert isinstance(params, dict)
            parsed = parser.parse_overrides([f"{k!s}={v!s}" for k, v in params.items()] + overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        raise BadInput(_line(exc)) from exc
    keyed: dict[str, list[str]] = {}  # key -> its values as overrides; a later one replaces an earlier
    for o in parsed:
        keyed[o.get_key_element()] = ([f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()]
                                      if o.is_sweep_override() else [str(o.input_line)])
    firsts = [values[0] for values in keyed.values()]
    jobs = [firsts]
    for k, values in enumerate(keyed.values()):
        jobs += [firsts[:k] + [v] + firsts[k + 1:] for v in values[1:]]
    return jobs


def validate(overrides: list[str]) -> TrialConfig:
    """Compose one job and build its parts (then drop them), as the trial would."""
    try:
        tcfg = load(compose(overrides))
        # A recording provider would make the cassette's folder: check the model without it.
        model = {k: v for k, v in tcfg.model.items() if k != "record"}
        prepare(dataclasses.replace(tcfg, model=model)).provider.close()
    except (ConfigError, HydraException, OmegaConfBaseException, ValueError, KeyError, TypeError) as exc:
        raise BadInput(_line(exc)) from exc
    return tcfg


def reachable(trials: list[TrialConfig]) -> None:
    """The tracking store of every job, and the Docker engine and image if a job needs them."""
    for uri, results_dir in sorted({(t.tracking.uri, t.results_dir) for t in trials}):
        _tracking(uri, results_dir)
    images = sorted({str(t.sandbox.get("image")) for t in trials if t.sandbox.get("kind") == "docker"})
    if images:
        _docker(images)


def _tracking(uri: str, results_dir: Path) -> None:
    if uri.startswith("sqlite:"):
        folder = Path(uri.split(":///", 1)[-1]).parent
        if folder != results_dir and not (folder.is_dir() and os.access(folder, os.W_OK)):
            raise BadInput(f"tracking.uri={uri}: the folder {folder} does not exist or is not writable; "
                           "use an existing folder, or keep the store in results_dir")
    elif uri.startswith(("http://", "https://")):
        try:
            urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=5).close()
        except (urllib.error.URLError, OSError) as exc:
            raise BadInput(f"tracking.uri={uri}: no MLflow tracking server answers ({getattr(exc, 'reason', exc)}); "
                           "start one or use a sqlite:/// URI") from exc


def _docker(images: list[str]) -> None:
    from bench.sandbox.docker import dockerpy

    docker = dockerpy()
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:  # docker-py raises several kinds for the same fact
        raise BadInput(f"sandbox.kind=docker: no Docker engine answers at {host} ({type(exc).__name__}); start it "
                       "(scripts/ensure_docker.sh) or choose sandbox=local (UNSAFE, no isolation)") from exc
    for image in images:
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound as exc:
            raise BadInput(f"sandbox.image={image} is not built: run `make docker`") from exc
        except docker.errors.DockerException as exc:
            raise BadInput(f"sandbox.kind=docker: the engine at {host} failed: {_line(exc)}") from exc
