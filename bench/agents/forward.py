"""Carry 127.0.0.1:PORT to a unix socket: for an agent whose HTTP client speaks TCP only (Codex),
in a sandbox that has no network (`network_mode=none` keeps a loopback of its own) and reaches the
model proxy only through its bind-mounted unix socket (docs/agents.md).

    python3 -I -S forward.py PORT /path/to/proxy.sock

Runs in the sandbox with the image's python3 and the standard library only (hence no import of
ctxbench). It returns once the socket answers and it listens (exit 3: the
socket is not there, which is the harness's failure, never the agent's), serving from a child process that holds none of the
caller's descriptors (so an exec that started it ends when its own command does), whose pid it
prints; the caller ends it (and the turn's reap, if the caller could not). It runs as the agent's uid inside the agent's own exec: it carries only
what the agent could send to the socket itself, and no judge ever reads anything of it.
"""

import os
import socket
import sys
import threading

CHUNK = 1 << 16


def pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy until src ends, then end dst's writing half (HTTP keep-alive and SSE pass as bytes)."""
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def carry(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=carry, args=(client, path), daemon=True).start()


def main(argv: list) -> int:
    if len(argv) != 2 or not argv[0].isdigit():
        print("usage: forward.py PORT UNIX_SOCKET", file=sys.stderr)
        return 2
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:  # the proxy must be there before the agent starts: else the harness is broken, not the agent
        probe.connect(argv[1])
    except OSError as exc:
        print(f"forward.py: cannot reach the model proxy at {argv[1]}: {exc}", file=sys.stderr)
        return 3
    finally:
        probe.close()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(argv[0])))
    listener.listen(64)
    child = os.fork()
    if child:
        print(child)  # listening: the caller may connect now, and end it by this pid
        return 0
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    serve(listener, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
