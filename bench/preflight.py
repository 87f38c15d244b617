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

A plain run is composed once here (the composition that finds out whether it is a sweep is
also its job's) and its parts are built once: `check` returns them (`runner.Prepared`) and
bench/__main__.py hands them to the trial, which neither validates nor builds again.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from bench.config import ConfigError, TrialConfig, compose, load
from bench.trial.runner import Prepared, prepare

EXIT_BAD_INPUT = 2


class BadInput(ValueError):
    """The command line cannot run; the message is the one line the user sees."""


def check(argv: list[str]) -> Prepared | None:
    """Exit 2 with one line on stderr if the command line cannot run. If it can: a plain run's
    validated config and built parts, for its trial; None for a sweep or a flag of Hydra's."""
    args = [a for a in argv if a not in ("-m", "--multirun")]
    if any(a.startswith("-") for a in args):  # Hydra's own flags (--help, --cfg, ...): Hydra's to handle
        return None
    prepared: Prepared | None = None
    try:
        jobs, first, sweep = _plan(args, multirun=len(args) != len(argv))
        trials = []
        for k, job in enumerate(jobs):
            try:
                built = validate(job, first if k == 0 else None, keep=not sweep)
            except BadInput as exc:
                raise BadInput(f"{exc} (in the job {' '.join(job)})" if len(jobs) > 1 else str(exc)) from exc
            trials.append(built.trial)
            prepared = built if not sweep else None
        reachable(trials)
    except BadInput as exc:
        if prepared is not None:
            prepared.close()
        print(f"ctxbench: bad input: {exc}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    return prepared


def _line(exc: BaseException) -> str:
    """An exception as one line (Hydra's messages span several), from what it carries."""
    chain = [exc, *([exc.__cause__] if exc.__cause__ else [])]
    first = next((line for e in chain for line in str(e).splitlines() if line.strip()), type(exc).__name__)
    for e in chain:
        if isinstance(e, MissingConfigException) and e.options:  # a config group option that is not there
            first += f" (allowed: {', '.join(e.options)})"
        elif (
            isinstance(e, (ConfigAttributeError, ConfigKeyError))
            and e.full_key
            and isinstance(exc, HydraException)
        ):
            # an override of a key the config does not have
            node = e.parent_node
            allowed = f"; allowed keys: {', '.join(map(str, node))}" if isinstance(node, DictConfig) else ""
            first = f"{e.full_key}: no such key{allowed} (add a new key with +{e.full_key}=...)"
    return " ".join(first.split())


def plan(overrides: list[str], multirun: bool) -> list[list[str]]:
    """The jobs to validate: one per value of each swept key, the others at their first value."""
    return _plan(overrides, multirun)[0]


def _plan(overrides: list[str], multirun: bool) -> tuple[list[list[str]], DictConfig | None, bool]:
    """The jobs, the composition of the first (with Hydra's own node), and whether it is a sweep."""
    parser = OverridesParser.create()
    try:
        parsed = parser.parse_overrides(overrides)
        first = [
            f"{o.get_key_element()}={next(iter(o.sweep_string_iterator()))}"
            if o.is_sweep_override()
            else str(o.input_line)
            for o in parsed
        ]
        base = compose(first, return_hydra_config=True)
        sweep = multirun or str(OmegaConf.select(base, "hydra.mode")).endswith("MULTIRUN")
        if sweep:
            swept = base.hydra.sweeper.get("params")
            params = OmegaConf.to_container(swept, resolve=False) if swept else {}
            assert isinstance(params, dict)
            parsed = parser.parse_overrides([f"{k!s}={v!s}" for k, v in params.items()] + overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        raise BadInput(_line(exc)) from exc
    keyed: dict[str, list[str]] = {}  # key -> its values as overrides; a later one replaces an earlier
    for o in parsed:
        keyed[o.get_key_element()] = (
            [f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()]
            if o.is_sweep_override()
            else [str(o.input_line)]
        )
    firsts = [values[0] for values in keyed.values()]
    jobs = [firsts]
    for k, values in enumerate(keyed.values()):
        jobs += [firsts[:k] + [v] + firsts[k + 1 :] for v in values[1:]]
    # A sweep's first job adds the sweeper's values to the command line's: composed anew.
    return jobs, base if firsts == first else None, sweep


def validate(overrides: list[str], composed: DictConfig | None = None, keep: bool = False) -> Prepared:
    """Compose one job (unless given its composition) and build its parts, as the trial would.
    With `keep`, the parts are handed on (the caller closes them); else they are dropped."""
    try:
        tcfg = load(composed if composed is not None else compose(overrides))
        # A recording provider would make the cassette's folder: check the model without it, and
        # leave the recording provider to the trial.
        recording = "record" in tcfg.model
        model = {k: v for k, v in tcfg.model.items() if k != "record"}
        parts = prepare(dataclasses.replace(tcfg, model=model))
    except (ConfigError, HydraException, OmegaConfBaseException, ValueError, KeyError, TypeError) as exc:
        raise BadInput(_line(exc)) from exc
    prepared = Prepared(tcfg, parts)
    if keep and not recording:
        return prepared
    prepared.close()
    return Prepared(tcfg, None)


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
            raise BadInput(
                f"tracking.uri={uri}: the folder {folder} does not exist or is not writable; "
                "use an existing folder, or keep the store in results_dir"
            )
    elif uri.startswith(("http://", "https://")):
        try:
            urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=5).close()
        except (urllib.error.URLError, OSError) as exc:
            raise BadInput(
                f"tracking.uri={uri}: no MLflow tracking server answers ({getattr(exc, 'reason', exc)}); "
                "start one or use a sqlite:/// URI"
            ) from exc


def _docker(images: list[str]) -> None:
    from bench.sandbox.docker import dockerpy

    docker = dockerpy()
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:  # docker-py raises several kinds for the same fact
        raise BadInput(
            f"sandbox.kind=docker: no Docker engine answers at {host} ({type(exc).__name__}); start it "
            "(scripts/ensure_docker.sh) or choose sandbox=local (UNSAFE, no isolation)"
        ) from exc
    for image in images:
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound as exc:
            raise BadInput(f"sandbox.image={image} is not built: run `make docker`") from exc
        except docker.errors.DockerException as exc:
            raise BadInput(f"sandbox.kind=docker: the engine at {host} failed: {_line(exc)}") from exc
