#!/usr/bin/env bash
# Install the external agents the tests (or a study) need, once per machine, from the package
# registries by name, into ${CTXBENCH_AGENTS:-~/.cache/ctxbench/agents}/<name>-<version>/
# (docs/agents.md). Idempotent: an agent already installed at its pinned version is reused.
#
#   scripts/ensure_agents.sh                  # the agents `make test` runs (mini_swe_agent)
#   scripts/ensure_agents.sh claude_code codex
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
if [ "$#" -eq 0 ]; then set -- mini_swe_agent; fi
exec "$PY" -m bench.agents.install "$@"
