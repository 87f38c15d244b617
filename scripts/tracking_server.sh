#!/usr/bin/env bash
# A shared MLflow tracking server: PostgreSQL for runs, a local directory for artifacts that the
# server itself serves (clients upload and download over HTTP: nothing else needs sharing).
#
#   scripts/tracking_server.sh install   # only make sure PostgreSQL is installed (make test)
#   scripts/tracking_server.sh start     # idempotent; prints the tracking URI
#   scripts/tracking_server.sh status
#   scripts/tracking_server.sh stop
#
# Settings (environment):
#   TRACKING_DIR  where everything lives (default: $CTXBENCH_RESULTS or ./results, + /tracking-server):
#                 pg/data (the database cluster), pg/password, artifacts/, mlflow.log, mlflow.pid
#   PORT          MLflow's port (5000); HOST its address (127.0.0.1; 0.0.0.0 to serve a team,
#                 then also set MLFLOW_SERVER_ALLOWED_HOSTS, see docs/scaling.md)
#   PG_PORT       PostgreSQL's port (5433), always on 127.0.0.1: only the server talks to it
#   MLFLOW        the mlflow executable (default: the project's .venv/bin/mlflow)
#
# As root on Debian/Ubuntu it installs Debian's `postgresql` when no server binaries are found,
# and runs the database as the `postgres` user (PostgreSQL refuses to run as root): TRACKING_DIR
# must then be reachable by that user. The database password is generated once and kept in
# pg/password (mode 600); it reaches the server through the environment, not its command line.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${TRACKING_DIR:-${CTXBENCH_RESULTS:-$ROOT/results}/tracking-server}"
PORT="${PORT:-5000}"
HOST="${HOST:-127.0.0.1}"
PG_PORT="${PG_PORT:-5433}"
MLFLOW="${MLFLOW:-$ROOT/.venv/bin/mlflow}"
PG="$DIR/pg"

say() { echo "tracking_server: $*" >&2; }
die() { say "$*"; exit 1; }

pg_bin() {  # the newest installed PostgreSQL server's bin dir (Debian keeps them versioned)
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$d" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
  command -v pg_ctl >/dev/null 2>&1 && dirname "$(command -v pg_ctl)"
}

ensure_postgres() {
  [ -n "$(pg_bin)" ] && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing postgresql (Debian)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  fi
  [ -n "$(pg_bin)" ] || die "no PostgreSQL server found; install it (Debian: apt-get install postgresql)"
}

as_db() {  # run a command as the database's owner
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_ctl() { as_db "$(pg_bin)/pg_ctl" -D "$PG/data" "$@"; }

pg_uri() { echo "postgresql+psycopg2://ctxbench:$(cat "$PG/password")@127.0.0.1:$PG_PORT/$1"; }

start_postgres() {
  mkdir -p "$PG"
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$PG"
    runuser -u postgres -- test -w "$PG" ||
      die "$PG is not reachable by the postgres user: choose a TRACKING_DIR whose parents it can enter"
  fi
  chmod 700 "$PG"
  if [ ! -s "$PG/data/PG_VERSION" ]; then
    umask 077
    head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$PG/password"
    [ "$(id -u)" = 0 ] && chown postgres: "$PG/password"
    say "initialising a database cluster in $PG/data"
    as_db "$(pg_bin)/initdb" -D "$PG/data" -U ctxbench --pwfile="$PG/password" -E UTF8 \
      --auth-local=scram-sha-256 --auth-host=scram-sha-256 >"$PG/initdb.log" 2>&1 ||
      die "initdb failed: $(tail -n 5 "$PG/initdb.log")"
  fi
  if ! pg_ctl status >/dev/null 2>&1; then
    # TCP on loopback only, no unix socket (its path could exceed the 107-byte limit).
    pg_ctl -w -t 60 -l "$PG/server.log" \
      -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=''" start >/dev/null ||
      die "postgres did not start: $(tail -n 5 "$PG/server.log")"
  fi
  export PGPASSWORD
  PGPASSWORD="$(cat "$PG/password")"
  if [ -z "$(psql -h 127.0.0.1 -p "$PG_PORT" -U ctxbench -d postgres -tAc \
    "select 1 from pg_database where datname = 'mlflow'")" ]; then
    psql -h 127.0.0.1 -p "$PG_PORT" -U ctxbench -d postgres -qc "create database mlflow" >/dev/null
  fi
  unset PGPASSWORD
}

# The server's pid and its start time (field 22 of /proc/PID/stat): a pid alone may be reused.
proc_start() { awk '{sub(/.*\) /, ""); print $20}' "/proc/$1/stat" 2>/dev/null; }

server_pid() {  # the recorded server pid, if that process is still the one we started
  [ -s "$DIR/mlflow.pid" ] || return 1
  local pid start
  read -r pid start <"$DIR/mlflow.pid"
  [ -n "$pid" ] && [ "$(proc_start "$pid")" = "$start" ] && echo "$pid"
}

healthy() {
  "$ROOT/.venv/bin/python" - "$1" <<'EOF' 2>/dev/null
import sys, urllib.request
sys.exit(0 if urllib.request.urlopen(sys.argv[1] + "/health", timeout=5).read().strip() == b"OK" else 1)
EOF
}

url() { echo "http://$([ "$HOST" = 0.0.0.0 ] && echo 127.0.0.1 || echo "$HOST"):$PORT"; }

start() {
  ensure_postgres
  [ -x "$MLFLOW" ] || die "no mlflow at $MLFLOW (run make venv, or set MLFLOW)"
  "$(dirname "$MLFLOW")/python" -c "import psycopg2" 2>/dev/null ||
    die "psycopg2 is missing from $(dirname "$MLFLOW"): pip install -e '.[server]'"
  mkdir -p "$DIR/artifacts"
  start_postgres
  if pid=$(server_pid) && healthy "$(url)"; then
    say "already running (pid $pid)"
  else
    # Job execution (MLflow's GenAI evaluation jobs: seven huey worker processes, ~1.5 GB) is
    # unused by ctxbench: off unless asked for.
    MLFLOW_SERVER_ENABLE_JOB_EXECUTION="${MLFLOW_SERVER_ENABLE_JOB_EXECUTION:-false}" \
      MLFLOW_BACKEND_STORE_URI="$(pg_uri mlflow)" setsid "$MLFLOW" server \
      --artifacts-destination "$DIR/artifacts" --serve-artifacts \
      --host "$HOST" --port "$PORT" --workers 1 ${MLFLOW_SERVER_ARGS:-} \
      </dev/null >"$DIR/mlflow.log" 2>&1 &
    pid=$!
    echo "$pid $(proc_start "$pid")" >"$DIR/mlflow.pid"
    # A fresh database is migrated at first start: allow it a while.
    for _ in $(seq 1 180); do
      healthy "$(url)" && break
      kill -0 "$pid" 2>/dev/null || die "mlflow server exited: $(tail -n 20 "$DIR/mlflow.log")"
      sleep 1
    done
    healthy "$(url)" || die "mlflow server did not answer on $(url): see $DIR/mlflow.log"
    say "started (pid $pid): runs in PostgreSQL on 127.0.0.1:$PG_PORT, artifacts in $DIR/artifacts"
  fi
  echo "$(url)"
}

stop() {
  if pid=$(server_pid); then
    kill -TERM -- "-$pid" 2>/dev/null || true  # setsid made it a group leader: its workers too
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/mlflow.pid"
  if [ -n "$(pg_bin)" ] && [ -s "$PG/data/PG_VERSION" ] && pg_ctl status >/dev/null 2>&1; then
    pg_ctl -w -m fast stop >/dev/null
  fi
  say "stopped"
}

status() {
  if pid=$(server_pid) && healthy "$(url)"; then echo "running (pid $pid) at $(url)"; else
    echo "not running"; return 1; fi
}

case "${1:-start}" in
  install) ensure_postgres ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: $0 install|start|stop|status" ;;
esac
