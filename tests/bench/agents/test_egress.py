"""No connection leaves the machine, for every shipped agent (docs/agents.md).

mini-swe-agent runs on the host: its process, under `strace -f`, connects only to the ports the
trial's model proxy listened on (and, with its phone-home switch removed, the same check sees
litellm reach out: the check can fail). Claude Code and Codex run in the sandbox: the container
has no network (`NetworkMode: none`), and every phone-home switch of bench.agents.egress.PHONE_HOME
is in the agent's shipped config with the value that keeps it off. The strace reader is attacked
with the spellings of an address that leaves (IPv4-mapped IPv6, a loopback resolver, UDP sendto).
"""

from __future__ import annotations

import shutil
import stat
import tomllib
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bench.agents import egress, mini
from bench.agents.install import names
from bench.agents.spec import AgentSpec
from bench.config import compose
from bench.eventlog.writer import EventLog
from bench.providers.scripted import ScriptedProvider
from tests.bench.agents.test_mini import SEED, _play, box, mini_installed  # noqa: F401 - fixtures
from tests.bench.trial.conftest import CALC, tiny_task

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is installed by `make test`")

TRACE = """\
101 connect(3, {sa_family=AF_INET, sin_port=htons(41234), sin_addr=inet_addr("127.0.0.1")}, 16) = 0
101 connect(4, {sa_family=AF_UNIX, sun_path="/var/run/docker.sock"}, 110) = 0
102 connect(5, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 0
102 connect(6, {sa_family=AF_INET6, sin6_port=htons(41234), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0
103 sendto(7, "x", 1, 0, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("127.0.0.53")}, 16) = 1
103 connect(8, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::ffff:140.82.112.3", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>
104 sendmsg(9, {msg_name={sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("1.1.1.1")}, msg_namelen=16}, 0) = 1
104 connect(10, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("127.0.0.1.evil")}, 16) = 0
105 sendto(3, "ok", 2, 0, NULL, 0) = 2
"""


def test_the_strace_reader_tells_local_from_leaving():
    dests = egress.destinations(TRACE)
    assert len(dests) == 8  # the send on a connected socket names no address
    assert [str(d) for d in egress.leaving(dests)] == [
        "AF_INET 127.0.0.53:53",  # a DNS query to a loopback resolver is a lookup for a connection out
        "AF_INET6 ::ffff:140.82.112.3:443",  # IPv4-mapped: outside 127/8
        "AF_INET 1.1.1.1:443",  # a datagram's address in sendmsg
        "AF_INET 127.0.0.1.evil:80",
    ]  # what cannot be read as an address is not local
    assert {str(d) for d in dests if d.local} == {
        "AF_INET 127.0.0.1:41234",
        "AF_UNIX /var/run/docker.sock",
        "AF_NETLINK",
        "AF_INET6 ::1:41234",
    }


def _traced_player(spec: AgentSpec, tmp_path: Path, monkeypatch) -> tuple[mini.MiniPlayer, list[int], Path]:
    """mini's real driver in its real venv, each turn's process under strace (a wrapper in place
    of its interpreter), the ports the proxy listened on collected."""
    logs = tmp_path / "strace"
    logs.mkdir()
    wrapper = tmp_path / "python"
    real = mini.installed(spec)
    argv = " ".join(egress.strace_argv(Path(f"{logs}/trace.$$"), [str(real)]))
    wrapper.write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(mini, "installed", lambda spec: wrapper)
    script = [
        [{"name": "bash", "args": {"command": f"printf '%s' '{CALC}' > calc.py"}}],
        [{"name": "bash", "args": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}],
    ]
    player = mini.MiniPlayer(
        spec,
        ScriptedProvider(script, when_done="stop"),
        seed=SEED,
        window=0,
        relative=False,
        max_output=1000,
        exec_timeout_s=10,
    )
    ports: list[int] = []
    start = mini.ModelProxy.start

    def listening(self):
        out = start(self)
        ports.append(int(self.url.rsplit(":", 1)[1]))
        return out

    monkeypatch.setattr(mini.ModelProxy, "start", listening)
    return player, ports, logs


def _destinations(logs: Path) -> list[egress.Destination]:
    return [d for f in sorted(logs.iterdir()) for d in egress.destinations(f.read_text(errors="replace"))]


@needs_strace
@pytest.mark.timeout(300)
def test_mini_connects_only_to_the_proxy(mini_installed, box, tmp_path, monkeypatch):  # noqa: F811
    player, ports, logs = _traced_player(mini_installed, tmp_path, monkeypatch)
    reason = _play(tiny_task(), box, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    assert reason == "" and ports
    dests = _destinations(logs)
    inet = [d for d in dests if d.family in ("AF_INET", "AF_INET6")]
    assert inet, "strace saw mini's model calls"  # else the check below would hold vacuously
    assert egress.leaving(dests) == []
    assert {(d.address, d.port) for d in inet} <= {("127.0.0.1", p) for p in ports}


@needs_strace
@pytest.mark.timeout(300)
def test_without_its_phone_home_switch_mini_reaches_out_and_the_check_sees_it(
    mini_installed, box, tmp_path, monkeypatch
):  # noqa: F811
    """The guard removed: litellm fetches its price map at import, a connection (or at least the
    name lookup for it) that leaves; the same check as above fails."""
    env = {k: v for k, v in mini_installed.env.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    spec = AgentSpec.from_dict({**_config("mini_swe_agent"), "env": env})
    player, _, logs = _traced_player(spec, tmp_path, monkeypatch)
    _play(tiny_task(), box, EventLog(tmp_path / "events.jsonl"), player, drift=False)
    assert egress.leaving(_destinations(logs)), egress.summary(_destinations(logs))


def _config(name: str) -> dict:
    return OmegaConf.to_container(compose([f"agent={name}"]).agent, resolve=True)  # type: ignore[return-value]


def _setting(spec: AgentSpec, where: str) -> object:
    """A PHONE_HOME key's value in the agent's shipped config (config files with their
    placeholders filled in as a player fills them)."""
    if where.startswith("env."):
        return spec.env.get(where[4:])
    path, _, dotted = where.partition(":")
    text = spec.config_files[path].format(
        model_id=spec.model_id, port=1, socket="/s", session="s", instruction="i"
    )
    node: object = tomllib.loads(text)
    for key in dotted.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return node


@pytest.mark.parametrize("name", [n for n in names() if n != "own"])
def test_every_shipped_agent_carries_its_phone_home_switches(name):
    """An agent added without naming its phone-home switches fails here; one whose config loses a
    switch, or sets it on, fails too."""
    spec = AgentSpec.from_dict(_config(name))
    assert name in egress.PHONE_HOME, (
        f"name {name}'s phone-home switches in bench/agents/egress.py PHONE_HOME"
    )
    for where, off in egress.PHONE_HOME[name].items():
        assert _setting(spec, where) == off, (name, where)


def test_mini_gets_its_switches_and_no_key_of_ours(mini_installed, box, monkeypatch):  # noqa: F811
    """The env mini's process actually gets: every switch of its config, and none of our
    secrets (only KEEP_ENV of the harness's own environment)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    player = mini.MiniPlayer(
        mini_installed,
        ScriptedProvider([]),
        seed=SEED,
        window=0,
        relative=False,
        max_output=1000,
        exec_timeout_s=10,
    )
    from types import SimpleNamespace

    player.start(SimpleNamespace(sandbox=box, copy=box.workdir, log=None))
    try:
        for where, off in egress.PHONE_HOME["mini_swe_agent"].items():
            assert player.env[where[4:]] == off
        assert "ANTHROPIC_API_KEY" not in player.env and set(player.env) - set(mini_installed.env) <= {
            *mini.KEEP_ENV,
            "HOME",
            "MSWEA_GLOBAL_CONFIG_DIR",
            "NO_PROXY",
            "no_proxy",
            "PYTHONUNBUFFERED",
        }
    finally:
        player.home.cleanup()


@pytest.mark.docker
def test_the_sandbox_of_claude_code_and_codex_has_no_network(sandbox_cfg, docker_ready):
    """Both run inside the trial's sandbox (`runs: sandbox`): the container the harness creates
    has NetworkMode none, so the proxy's bind-mounted unix socket is their only way out."""
    from bench.sandbox import create
    from bench.sandbox.docker import _client

    sandboxed = [n for n in names() if n != "own" and AgentSpec.from_dict(_config(n)).runs == "sandbox"]
    assert {"claude_code", "codex"} <= set(sandboxed)
    sandbox = create(sandbox_cfg, {"README.md": "x\n"}, "egress-net", {"ctxbench.test": "agents"})
    try:
        hc = _client().containers.get(sandbox.container_id).attrs["HostConfig"]
        assert hc["NetworkMode"] == "none"
        probe = sandbox.exec("python3 -c \"import socket; socket.create_connection(('1.1.1.1', 443), 3)\"")
        assert probe.exit_code != 0 and "unreachable" in probe.output.lower()
    finally:
        sandbox.close()


def test_the_egress_command_says_how_to_use_it(capsys):
    assert egress.main([]) == 2 and "python -m bench.agents.egress" in capsys.readouterr().out
