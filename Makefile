# ctxbench entry points. CI runs `make test` through .ci/run.
#   make setup   venv + Docker engine + sandbox image (idempotent, fast when done)
#   make test    setup, lint, the local model, then the whole test suite with Docker and the
#                real local model required (the model's first build: ~14 min on 2 cores, once per machine)
#   make local-model  llama-server + SmolLM2-135M-Instruct into $${CTXBENCH_CACHE:-~/.cache/ctxbench}
#   make real-pilot   a small study on the real local model, its report, calibration and fidelity
#   make demo    a small study end to end, then the report
#   make bench   sandbox/harness micro-benchmarks, and the diff page of a 300-turn trial pair
#   make tracking-server / tracking-server-stop   a shared MLflow server on PostgreSQL

SHELL := /bin/bash
# Prefer python3.11 (the version pinned by CI); any python3 >= 3.11 works.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3 2>/dev/null)
VENV := .venv
BIN := $(VENV)/bin
# Stamp inside the venv: reinstall only when pyproject.toml changes or the venv is deleted.
STAMP := $(VENV)/.ctxbench-installed

.DEFAULT_GOAL := setup
.PHONY: venv docker setup lint test test-slow demo bench tracking-server tracking-server-stop local-model real-pilot agents

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "make venv: no python3.11/python3 on PATH" >&2; exit 1; }
	@# Debian's python3 ships without ensurepip unless python3-venv is installed.
	@if ! $(PYTHON) -c 'import ensurepip' 2>/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; \
	  else echo "make venv: $(PYTHON) has no venv support; install python3-venv" >&2; exit 1; fi; \
	fi
	$(PYTHON) -m venv $(VENV)
	@# The cluster and server extras too: `make test` runs the Ray, submitit and tracking-server
	@# tests (hydra-ray-launcher's cloudpickle<3 pin is within mlflow's cloudpickle<4).
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,ray,slurm,server]'
	@touch $@

docker:
	scripts/ensure_docker.sh
	scripts/build_image.sh

setup: venv docker

# Built once per machine into a cache outside the repository (keyed by version); then a stamp check.
local-model:
	nice -n 10 scripts/ensure_local_model.sh

# External agents (docs/agents.md), from the registries by name into a cache outside the repository.
agents: venv
	nice -n 10 scripts/ensure_agents.sh

lint: venv
	$(BIN)/ruff check ctxlog bench tasks strategies analysis tests
	$(BIN)/ruff format --check ctxlog bench tasks strategies analysis tests hydra_plugins scripts
	$(BIN)/mypy ctxlog bench strategies

# -n 3: three xdist workers on 2 cores. The tests wait on Docker execs, subprocesses and servers
# far more than they compute: 13:11 against ~22 min in one process, here.
test: setup lint local-model agents
	@# The tracking-server test needs PostgreSQL's server binaries (installed here, as root, if absent).
	scripts/tracking_server.sh install
	@# tests/bench/trial/test_git_paths.py watches host git's syscalls with strace (Debian's; skipped without).
	@command -v strace >/dev/null || [ "$$(id -u)" != 0 ] || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace; }
	@# The browser tests open the report and a diff page in headless Chromium (Debian's, as root).
	scripts/ensure_browser.sh
	CTXBENCH_REQUIRE_DOCKER=1 CTXBENCH_REQUIRE_LOCAL_MODEL=1 $(BIN)/pytest -q -n 3 -m "not slow"

# A small study on the real local model (SmolLM2-135M under llama-server), then its report, the
# sim calibrated on it (conf/model/sim_smollm2_pilot.yaml) and that sim's fidelity, per cell.
real-pilot: setup local-model
	scripts/real_pilot.sh

# The long sweeps (e.g. the oracle over 3 families x 50 seeds x 4 arms through Docker).
test-slow: setup
	CTXBENCH_REQUIRE_DOCKER=1 $(BIN)/pytest -q -m slow

demo: setup
	$(BIN)/python -m bench -m experiment=demo
	$(BIN)/python -m analysis.report
	@echo
	@echo "Browse the runs:  $(BIN)/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/results/mlflow.db"
	@echo "Read the report:  $(CURDIR)/results/report/index.md  (or index.html in a browser)"

# A shared MLflow tracking server: PostgreSQL backend, artifacts served over HTTP (docs/scaling.md).
# Runs in the background; PORT=5000 HOST=127.0.0.1 PG_PORT=5433 TRACKING_DIR=results/tracking-server.
tracking-server: venv
	@scripts/tracking_server.sh start

tracking-server-stop:
	@scripts/tracking_server.sh stop

bench: setup
	$(BIN)/python -m bench.perf
	$(BIN)/python -m analysis.diff.pagecost
