#!/usr/bin/env bash
# Make sure a Docker engine answers `docker info`. Idempotent: a no-op when it already does.
#
# On a root Debian-like machine without systemd (CI, dev containers) it installs docker.io
# when missing and starts dockerd in the background itself; systemctl is deliberately not
# used because CI has no init system. Anywhere else it explains how to start Docker.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LOG_DIR="$ROOT/results/logs"
LOG="$LOG_DIR/dockerd.log"
WAIT_S="${CTXBENCH_DOCKER_WAIT_S:-60}"

say() { echo "ensure_docker: $*" >&2; }
engine_up() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

if engine_up; then
  say "Docker engine is reachable"
  exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  say "no reachable Docker engine, and this is not a root Debian-like machine, so it will not be started automatically."
  say "Start Docker yourself (e.g. 'sudo systemctl start docker', or start Docker Desktop),"
  say "make sure your user may use it ('sudo usermod -aG docker \$USER', then log in again),"
  say "check with 'docker info', then rerun this script."
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  # Refresh package lists only when apt does not know a candidate (fresh CI images ship
  # without lists); otherwise an update costs time for nothing.
  if ! apt-cache policy docker.io 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    say "apt-get update"
    apt-get update -qq
  fi
  say "installing docker.io"
  if ! apt-get install -y -qq --no-install-recommends docker.io; then
    # Stale lists can point at packages the mirror no longer has: refresh once and retry.
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends docker.io
  fi
fi

# dockerd starts in a cgroup of its own where one can be made (cgroup v1's cpuacct, or v2):
# what the engine starts, such as the runc of every `docker exec`, then counts as the
# engine's CPU in `make bench` (bench/perf/containers.py); elsewhere it starts where it is.
start_dockerd() {
  local g
  for g in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup; do
    if [ -e "$g/cpuacct.usage" ] || [ -e "$g/cgroup.controllers" ]; then
      mkdir -p "$g/ctxbench-engine" 2>/dev/null && echo "$BASHPID" >"$g/ctxbench-engine/cgroup.procs" 2>/dev/null && break
    fi
  done
  # setsid + nohup: the daemon must outlive this script and the make process group.
  exec setsid nohup dockerd >>"$LOG" 2>&1 </dev/null
}

mkdir -p "$LOG_DIR"
# Do not start a second daemon if one is already coming up (e.g. a parallel make target).
if pid="$(cat /var/run/docker.pid 2>/dev/null)" && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
  say "dockerd (pid $pid) is already running; waiting for it"
else
  say "starting dockerd in the background (log: $LOG)"
  start_dockerd &
  pid=$!
fi

for _ in $(seq 1 $((WAIT_S * 2))); do
  if engine_up; then
    say "Docker engine is up"
    exit 0
  fi
  # setsid may fork, so also accept the pid dockerd itself records.
  if ! kill -0 "$pid" 2>/dev/null && ! kill -0 "$(cat /var/run/docker.pid 2>/dev/null || echo 0)" 2>/dev/null; then
    say "dockerd exited early; last lines of $LOG:"
    tail -n 30 "$LOG" >&2 || true
    exit 1
  fi
  sleep 0.5
done

say "dockerd did not answer 'docker info' within ${WAIT_S}s; last lines of $LOG:"
tail -n 30 "$LOG" >&2 || true
exit 1
