"""A real local model: llama.cpp's llama-server with SmolLM2-135M-Instruct, on loopback.

scripts/ensure_local_model.sh installs both into a cache outside the repository; `server.py`
finds that install and runs the server; `python -m bench.local serve` keeps one running.
"""
