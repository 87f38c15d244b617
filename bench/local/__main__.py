"""python -m bench.local serve [--port P] [--ctx N]: run the local model's server on loopback."""

from __future__ import annotations

import argparse

from bench.local.server import serve

parser = argparse.ArgumentParser(prog="python -m bench.local")
parser.add_argument("command", choices=["serve"])
parser.add_argument("--port", type=int, default=None)
parser.add_argument("--ctx", type=int, default=4096)
args = parser.parse_args()
serve(args.port, args.ctx)
