#!/usr/bin/env bash
# The ggml baseline of attn-bench --linear's decode row, in the same script:
# llama.cpp's GGML_OP_GATED_DELTA_NET (ggml's CPU recurrence) on one decode
# token of every linear layer of the seed model (69 layers, H_k 32, H_v 64,
# d 128: 4 MiB fp32 states) and of Qwen3-Next-80B (36 layers, 16/32/128:
# 2 MiB), each layer's state from memory, alternating with the compiled
# kernel's `attn-bench --linear --decode --shape MODEL`, ROUNDS rounds each.
#
#   tools/ggml-baseline.sh GGML_SOURCE_DIR [ROUNDS]
#
# GGML_SOURCE_DIR: a checkout of github.com/ggml-org/ggml (measured at
# d99724f); it is built once into GGML_SOURCE_DIR/build-attn (CPU only,
# -march=native, OpenMP) with tools/baselines/ggml-gdn-decode.cpp. Needs
# build/bin/attn-bench (tools/dev.sh build). Nothing is installed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ $# -lt 1 ] || [ ! -f "$1/include/ggml.h" ]; then
  echo "usage: $0 GGML_SOURCE_DIR [ROUNDS] (a ggml checkout: GGML_SOURCE_DIR/include/ggml.h)" >&2
  exit 2
fi
GGML="$(cd "$1" && pwd)"
ROUNDS="${2:-3}"
BUILD="$GGML/build-attn"
BENCH="$ROOT/build/bin/attn-bench"
[ -x "$BENCH" ] || { echo "$0: $BENCH is missing: run tools/dev.sh build" >&2; exit 2; }
if [ ! -f "$BUILD/src/libggml-cpu.a" ]; then
  cmake -S "$GGML" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DBUILD_SHARED_LIBS=OFF \
    -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >/dev/null
  ninja -C "$BUILD" -j2 ggml ggml-base ggml-cpu >/dev/null
fi
EXE="$BUILD/ggml-gdn-decode"
clang++-22 -O2 -march=native -std=c++17 -I"$GGML/include" \
  "$ROOT/tools/baselines/ggml-gdn-decode.cpp" "$BUILD/src/libggml.a" \
  "$BUILD/src/libggml-cpu.a" "$BUILD/src/libggml-base.a" -fopenmp -lpthread \
  -lm -o "$EXE"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), 2 threads, ggml $(git -C "$GGML" rev-parse --short HEAD 2>/dev/null || echo '(no git)')"
CSV="$(mktemp)"
trap 'rm -f "$CSV"' EXIT
# model: H_k H_v d linear-layers
for model in "seed 32 64 128 69" "qwen3-next-80b 16 32 128 36"; do
  set -- $model
  for r in $(seq "$ROUNDS"); do
    echo "$1, round $r"
    "$BENCH" --linear --decode --shape "$1" --repeats 9 --csv "$CSV" | grep "one step"
    OMP_NUM_THREADS=2 "$EXE" "$2" "$3" "$4" "$5" 2 9 1
  done
done
