#!/usr/bin/env bash
# The project's main job on the bundled default, called by `tools/dev.sh run`
# after the build. Argument: the build directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"

echo "== attn-opt: the seed model's attention (64 query heads, 4 KV heads, d=256), verified and printed"
"$BUILD_DIR/bin/attn-opt" "$ROOT/examples/seed-gqa-sdpa.mlir"
