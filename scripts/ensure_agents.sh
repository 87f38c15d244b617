#!/usr/bin/env bash
# Install the external agents the tests (or a study) need, once per machine, from the package
# registries by name, into ${CTXBENCH_AGENTS:-~/.cache/ctxbench/agents}/<name>-<version>/
# (docs/agents.md). Idempotent: an agent already installed at its pinned version is reused.
#
#   scripts/ensure_agents.sh                  # the agents `make test` runs (mini_swe_agent, claude_code, codex)
#   scripts/ensure_agents.sh claude_code codex
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
if [ "$#" -eq 0 ]; then set -- mini_swe_agent claude_code codex; fi
# npm agents (claude_code, codex) need npm: Debian's, installed here on a fresh machine.
case " $* " in *" claude_code "*|*" codex "*)
  if ! command -v npm >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
    else
      echo "ensure_agents: npm is missing; install it (Debian: sudo apt-get install npm) and run again" >&2; exit 1
    fi
  fi;;
esac
exec "$PY" -m bench.agents.install "$@"
