"""Fixtures every test package may use; tests/conftest.py makes them visible everywhere.
CI sets CTXBENCH_REQUIRE_DOCKER=1 so that Docker tests fail instead of skipping."""

from __future__ import annotations

import os

import pytest

from bench.sandbox import SandboxConfig
from tests.helpers.configs import sandbox_config

# Fake keys for the real providers: long enough to count as secrets (bench.core.redact), and
# never valid anywhere. Tests that build a real provider set them with the `api_keys` fixture.
API_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdef",
    "OPENAI_API_KEY": "sk-oai-test-0123456789abcdef",
    "DEEPSEEK_API_KEY": "sk-dsk-test-0123456789abcdef",
}


@pytest.fixture
def api_keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The fake keys in the environment, by variable name (use with pytest.mark.usefixtures)."""
    for var, key in API_KEYS.items():
        monkeypatch.setenv(var, key)
    return dict(API_KEYS)


@pytest.fixture(autouse=True)
def environment_restored() -> object:
    """Each test starts from the environment the last one started from. Code under test sets
    variables for its own children (the study callback's CTXBENCH_STUDY, in-process jobs' HOME):
    left behind, they reach a later test's `python -m bench`, which then counts itself part of a
    study that is not its own (a plug-in trial once found two runs in its store)."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="session")
def sandbox_cfg() -> SandboxConfig:
    """`sandbox=docker` as the harness composes it, validated."""
    return sandbox_config("docker")


@pytest.fixture(scope="session")
def docker_ready(sandbox_cfg: SandboxConfig) -> None:
    """Engine reachable and sandbox image built; otherwise skip, or fail under CTXBENCH_REQUIRE_DOCKER=1."""
    problem = None
    try:
        from bench.sandbox.docker import dockerpy

        docker = dockerpy()
        client = docker.from_env(timeout=30)
        client.ping()
        try:
            client.images.get(sandbox_cfg.image)
        except docker.errors.ImageNotFound:
            problem = f"sandbox image {sandbox_cfg.image} is not built (run `make docker`)"
    except Exception as e:  # no docker-py, no socket, engine down: all mean "no Docker here"
        problem = f"Docker engine unavailable ({e}); run scripts/ensure_docker.sh"
    if problem is None:
        return
    if os.environ.get("CTXBENCH_REQUIRE_DOCKER") == "1":
        pytest.fail(f"CTXBENCH_REQUIRE_DOCKER=1 but {problem}", pytrace=False)
    pytest.skip(problem)
