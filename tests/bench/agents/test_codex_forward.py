"""The in-sandbox forwarder (bench/agents/forward.py): 127.0.0.1:PORT carried to the model proxy's
unix socket, run as the sandbox runs it (`python3 -I -S`, the standard library only). It returns
once it listens and holds none of its caller's descriptors; requests, keep-alive, streamed
replies, large bodies and several connections at once pass byte for byte."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bench.agents import forward
from bench.eventlog.writer import EventLog
from bench.providers.scripted import ScriptedProvider
from bench.proxy.server import ModelProxy
from ctxlog import events as ev
from ctxlog.reader import Log

SCRIPT = Path(forward.__file__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def carried(tmp_path):
    """A proxy on a unix socket only (no TCP), and the forwarder in front of it."""
    log = EventLog(tmp_path / "events.jsonl")
    log.append(
        ev.TrialStart(
            trial_id="t",
            task_id="x",
            strategy="agent",
            arm="baseline",
            seed=1,
            max_output=4096,
            schema=ev.SCHEMA,
        )
    )
    script = [
        [{"name": "exec_command", "args": {"cmd": "x" * 300_000}}],
        [{"name": "exec_command", "args": {"cmd": "y"}}],
    ]
    proxy = ModelProxy(
        ScriptedProvider(script * 5, when_done="stop"),
        log,
        seed=1,
        tcp=False,
        socket_path=tmp_path / "m.sock",
    ).start()
    port = _free_port()
    started = time.monotonic()
    # as the sandbox runs it: its stdout a pipe the caller reads to the end
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(SCRIPT), str(port), str(tmp_path / "m.sock")],
        capture_output=True,
        timeout=20,
    )
    returned_s = time.monotonic() - started
    pid = int(done.stdout)  # it serves from a process of its own, and says which
    try:
        yield port, done, returned_s, proxy
    finally:
        os.kill(pid, signal.SIGKILL)
        proxy.stop()
        log.close()


def _post(conn: http.client.HTTPConnection, body: dict, stream: bool) -> tuple[int, bytes]:
    conn.request(
        "POST",
        "/v1/responses",
        json.dumps({**body, "stream": stream}).encode(),
        {"Content-Type": "application/json"},
    )
    resp = conn.getresponse()
    return resp.status, resp.read()


def test_requests_pass_to_the_unix_socket_and_back_byte_for_byte(carried, tmp_path):
    port, done, returned_s, proxy = carried
    # it returned (its output read to the end) once listening: its server holds none of our pipes
    assert done.returncode == 0 and _alive(int(done.stdout)) and returned_s < 15
    big = {
        "model": "m",
        "input": [{"type": "message", "role": "user", "content": "z" * 2_000_000}],
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}],
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    status, first = _post(conn, big, stream=False)  # 2 MB up, 300 KB down
    assert status == 200 and json.loads(first)["output"][0]["arguments"] == json.dumps({"cmd": "x" * 300_000})
    status, second = _post(conn, big, stream=True)  # the same connection again: keep-alive, then SSE
    assert status == 200 and second.startswith(b"event: response.created") and b"response.completed" in second
    conn.close()
    log = Log.from_path(tmp_path / "events.jsonl")
    replies = log.of(ev.AgentReply)
    assert [r.body.encode() for r in replies] == [first, second]  # what came back is what the proxy sent
    assert len(log.of(ev.AgentRequest)[0].body) > 2_000_000


def test_several_connections_at_once(carried):
    port, _, _, proxy = carried
    body = {
        "model": "m",
        "input": "hello",
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}],
    }
    statuses: list[int] = []

    def one() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        statuses.append(_post(conn, body, stream=True)[0])
        conn.close()

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * 6 and proxy.requests == 6


def test_no_socket_behind_it_is_refused_before_it_listens(tmp_path):
    port = _free_port()
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(SCRIPT), str(port), str(tmp_path / "absent.sock")],
        timeout=20,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 3 and "cannot reach the model proxy" in done.stderr and done.stdout == ""


def test_bad_arguments_are_one_line():
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(SCRIPT), "notaport"], capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.strip() == "usage: forward.py PORT UNIX_SOCKET"
