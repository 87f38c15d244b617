#!/usr/bin/env bash
# make real-pilot: a small study on the real local model, its report, calibration and fidelity.
#   STUDY=real-pilot SEEDS=1,2 STEPS=6 TURNS=8 PORT=8091 scripts/real_pilot.sh
# Results go to $CTXBENCH_RESULTS (default results/); the server runs only while this does.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
STUDY=${STUDY:-real-pilot}
SEEDS=${SEEDS:-1,2}
STEPS=${STEPS:-6}
TURNS=${TURNS:-8}
export CTXBENCH_LOCAL_PORT=${PORT:-8091}

$BIN/python -m bench.local serve --port "$CTXBENCH_LOCAL_PORT" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 240); do
  curl -sf "http://127.0.0.1:$CTXBENCH_LOCAL_PORT/health" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { echo "real-pilot: the local model server did not start" >&2; exit 1; }
  sleep 0.5
done

# One worker: the server has one slot, and every trial reuses the prompt prefix it holds.
$BIN/python -m bench -m model=smollm2 strategy=raw,ledger,compaction arm=baseline,compaction \
  task.seed="$SEEDS" ++task.size.steps="$STEPS" ++task.size.filler=0 limits.max_turns="$TURNS" limits.max_turns_per_step=4 \
  study.name="$STUDY"
$BIN/python -m analysis.report study="$STUDY"
$BIN/python -m analysis.calibrate "$STUDY" --name smollm2_pilot
$BIN/python -m analysis.calibrate.fidelity "$STUDY" --model sim_smollm2_pilot --run
$BIN/python -m analysis.calibrate.fidelity "$STUDY" --sim "fidelity_sim_smollm2_pilot" -o "${CTXBENCH_RESULTS:-results}/real-pilot-fidelity.md"
