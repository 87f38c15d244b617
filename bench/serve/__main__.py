"""`python -m bench.serve`: the loopback server (see bench/serve/server.py)."""

from bench.serve.server import main

main()
