"""The sandbox seam for an agent that runs inside it (docs/agents.md): host folders mounted
read-only at creation, and an agent command run with an env of its player's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.accel import pool
from bench.sandbox import Mount, SandboxConfig, create
from bench.sandbox.docker import DockerSandbox
from bench.sandbox.judge import AGENT_UID
from tests.helpers.configs import sandbox_config

FILES = {"README.md": "# demo\n"}
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def local_cfg() -> SandboxConfig:
    return sandbox_config("local")


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    d = tmp_path / "agent"
    d.mkdir()
    (d / "bin.sh").write_text("echo from-the-mount\n")
    d.chmod(0o755)
    (d / "bin.sh").chmod(0o755)
    return d


@pytest.mark.parametrize(
    "target",
    ["opt/agent", "/work/x", "/judge", "/tmp/a", "/", "/opt/../work", "/etc", "/usr/local/x", "/dev/shm"],
)
def test_mount_targets_inside_the_sandboxs_own_places_are_refused(agent_dir: Path, target: str) -> None:
    with pytest.raises(ValueError, match="sandbox mount: target"):
        Mount(agent_dir, target)


def test_a_mount_source_must_be_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="existing folder"):
        Mount(tmp_path / "missing", "/opt/agent")
    with pytest.raises(ValueError, match="existing folder"):
        Mount(Path("relative"), "/opt/agent")


def test_local_sandbox_refuses_mounts(local_cfg: SandboxConfig, agent_dir: Path) -> None:
    with pytest.raises(ValueError, match="sandbox=local cannot mount"):
        create(local_cfg, FILES, "t-local", mounts=(Mount(agent_dir, "/opt/agent"),))


def test_env_is_refused_for_the_judge(local_cfg: SandboxConfig) -> None:
    sb = create(local_cfg, FILES, f"t-{uuid.uuid4().hex[:8]}")
    try:
        with pytest.raises(ValueError, match="judge's environment"):
            sb.exec("true", judge=True, env={"A": "1"})
        with pytest.raises(ValueError, match="not a variable name"):
            sb.exec("true", env={"A=B": "1"})
        res = sb.exec('printf %s "$AGENT_VAR"', env={"AGENT_VAR": "v 1"})
        assert res.output == "v 1"
    finally:
        sb.close()


@pytest.fixture
def mounted(sandbox_cfg: SandboxConfig, agent_dir: Path) -> Iterator[DockerSandbox]:
    box = create(sandbox_cfg, FILES, f"test-{uuid.uuid4().hex[:8]}", mounts=(Mount(agent_dir, "/opt/agent"),))
    assert isinstance(box, DockerSandbox)
    yield box
    box.close()


@pytest.mark.docker
@pytest.mark.usefixtures("docker_ready")
def test_a_mounted_folder_is_read_only_and_an_agent_command_gets_its_env(
    mounted: DockerSandbox, agent_dir: Path
) -> None:
    res = mounted.exec(
        '/opt/agent/bin.sh; id -u; printf "%s|%s\\n" "$AGENT_HOME" "$HOME"',
        env={"AGENT_HOME": "/tmp/agent-home", "HOME": "/tmp/agent-home"},
    )
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == ["from-the-mount", str(AGENT_UID), "/tmp/agent-home|/tmp/agent-home"]
    # the agent cannot change what the harness mounted (read-only, whoever owns the host folder)
    wrote = mounted.exec(
        "echo x > /opt/agent/bin.sh; echo y > /opt/agent/new; mount -o remount,rw /opt/agent 2>&1; echo done"
    )
    assert "done" in wrote.output and (agent_dir / "bin.sh").read_text() == "echo from-the-mount\n"
    assert not (agent_dir / "new").exists()
    # the exec's mark is the harness's: an env naming it does not replace it (the reap finds it)
    assert (
        "ctxbench" not in mounted.exec('printf %s "$CTXBENCH_EXEC"', env={"CTXBENCH_EXEC": "ctxbench"}).output
    )
    assert not mounted.reusable and "agent's mounts" in mounted.not_reusable_because


@pytest.mark.docker
@pytest.mark.usefixtures("docker_ready")
def test_a_longer_output_tail_is_kept_when_asked(mounted: DockerSandbox) -> None:
    long = mounted.exec("seq 1 20000", output_limit_chars=200_000)
    assert long.output.endswith("20000\n") and long.output.startswith("1\n")
    assert mounted.exec("seq 1 20000").output.startswith("[ctxbench: output truncated")


@pytest.mark.docker
@pytest.mark.usefixtures("docker_ready")
def test_pool_never_hands_a_mounted_sandbox_on(sandbox_cfg: SandboxConfig, agent_dir: Path) -> None:
    cfg = sandbox_cfg.model_copy(update={"reuse": True})
    labels = {"ctxbench.study": f"s-{uuid.uuid4().hex[:6]}"}
    box = pool.acquire(
        cfg, FILES, f"test-{uuid.uuid4().hex[:8]}", labels, mounts=(Mount(agent_dir, "/opt/agent"),)
    )
    try:
        pool.release(box, cfg, labels)
        assert pool.idle() == 0
    finally:
        box.close()
        pool.close_all()
