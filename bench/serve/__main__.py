"""`python -m bench.serve`: the loopback server's command line (the server: bench/serve/server.py)."""

from __future__ import annotations

import argparse
import logging

from bench.serve import limits, server
from bench.serve.backend import SimBackend, load_model_config
from bench.serve.server import FAULTS, LOOPBACK, LoopbackServer


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.serve", description=(server.__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--host", default="127.0.0.1", choices=LOOPBACK)
    p.add_argument(
        "--fault", action="append", default=[], metavar="KIND[:COUNT]", help=f"one of {', '.join(FAULTS)}"
    )
    p.add_argument("--retry-after", type=float, default=1.0, help="seconds, sent with injected 429s")
    p.add_argument("--slow-s", type=float, default=5.0, help="how long a `slow` fault stalls")
    p.add_argument(
        "--sim-config", default=None, help="model config for the sim (default conf/model/sim.yaml)"
    )
    p.add_argument(
        "--key-env", default=None, help="require the key to equal this environment variable's value"
    )
    p.add_argument(
        "--time-scale",
        type=float,
        default=0.0,
        help="pace streams: first token after ttft_s x this, end after latency_s x this (0 = at once)",
    )
    limits.add_arguments(p)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    backend = SimBackend(load_model_config(a.sim_config) if a.sim_config else None)
    srv = LoopbackServer(
        backend,
        host=a.host,
        port=a.port,
        faults=a.fault,
        retry_after_s=a.retry_after,
        slow_s=a.slow_s,
        key_env=a.key_env,
        time_scale=a.time_scale,
        limits=limits.from_args(a),
    )
    print(
        f"ctxbench loopback server on {srv.url}  (anthropic base_url={srv.url}, openai base_url={srv.url}/v1)",
        flush=True,
    )
    try:
        srv._httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stopping.set()
        srv._httpd.server_close()


if __name__ == "__main__":
    main()
