"""Find the local install (scripts/ensure_local_model.sh) and run llama-server on loopback.

The server runs one slot (`-np 1`): calls queue, and each reuses the prompt prefix the slot
holds, which is what makes the later turns of a trial fast (the first is a 14-42 s prefill on
2 cores). It is started with the chat template the install copied (Qwen2.5's, which lists
tools, for model.tool_calls=native); with model.tool_calls=grammar no template tool handling
is used at all.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENSURE = REPO / "scripts" / "ensure_local_model.sh"
DEFAULT_PORT = 8091


class LocalModelMissing(RuntimeError):
    """The local model is not installed: run scripts/ensure_local_model.sh (or make local-model)."""


@dataclass(frozen=True)
class Install:
    server: Path
    gguf: Path
    template: Path


def find_install() -> Install:
    """The installed server and model, without building anything."""
    probe = subprocess.run(["bash", str(ENSURE), "--check"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise LocalModelMissing(
            "the local model is not installed: run `make local-model` "
            "(scripts/ensure_local_model.sh; ~14 min the first time on 2 cores)"
        )
    env_file = Path(
        subprocess.run(["bash", str(ENSURE)], capture_output=True, text=True, check=True).stdout.strip()
    )
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    return Install(
        Path(values["CTXBENCH_LLAMA_SERVER"]),
        Path(values["CTXBENCH_LOCAL_GGUF"]),
        Path(values["CTXBENCH_CHAT_TEMPLATE"]),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """One llama-server process; a context manager that stops it on the way out."""

    def __init__(
        self,
        install: Install,
        *,
        port: int = DEFAULT_PORT,
        ctx: int = 4096,
        threads: int = 2,
        log_path: Path | None = None,
    ) -> None:
        self.install, self.port, self.ctx, self.threads = install, port, ctx, threads
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait_s: float = 120.0) -> LlamaServer:
        cmd = [
            str(self.install.server),
            "-m",
            str(self.install.gguf),
            "--jinja",
            "--chat-template-file",
            str(self.install.template),
            "-c",
            str(self.ctx),
            "-t",
            str(self.threads),
            "-np",
            "1",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--alias",
            "smollm2-135m-instruct",
        ]
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115 - kept open with the process
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}; see {self.log_path}")
            if self.healthy():
                return self
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"llama-server did not become healthy within {wait_s:.0f}s on port {self.port}")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                return r.status == 200 and json.loads(r.read() or b"{}").get("status") == "ok"
        except (OSError, ValueError):
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> LlamaServer:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(port: int | None = None, ctx: int = 4096) -> None:
    """Run the server in the foreground until interrupted (make real-pilot, by hand)."""
    port = port or int(os.environ.get("CTXBENCH_LOCAL_PORT", DEFAULT_PORT))
    # SIGTERM (a script's `kill`) must stop the server too: it runs in a session of its own.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with LlamaServer(find_install(), port=port, ctx=ctx) as srv:
        print(f"llama-server (SmolLM2-135M-Instruct, -c {ctx}) at {srv.url}/v1", flush=True)
        try:
            while srv.proc is not None and srv.proc.poll() is None:
                time.sleep(1)
        except KeyboardInterrupt:
            pass
