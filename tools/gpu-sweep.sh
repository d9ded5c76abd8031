#!/usr/bin/env bash
# Static sweep of the CUDA backend, no GPU needed: every config of the test
# suite and of ../shared/configs, compiled to PTX under each GPU variant
# below, every kernel assembled by ptxas. Prints one line per finding:
#   CRASH      attn-compile died on a signal (rc >= 128): always a bug;
#   PTXAS-FAIL ptxas refused a kernel;
#   SPILL      ptxas spilled registers in a kernel;
#   refused    attn-compile refused the config (its first words): expected
#              for what the CUDA kernels do not take, listed to be read.
# and a summary line; exits 1 on a crash, a ptxas failure or a spill.
#
#   tools/gpu-sweep.sh [BUILD_DIR]     (about 8 minutes on one core)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"
COMPILE="$BUILD_DIR/bin/attn-compile"
PTXAS="${PTXAS:-/usr/local/cuda/bin/ptxas}"
[ -x "$COMPILE" ] || { echo "gpu-sweep: no $COMPILE (tools/dev.sh build first)" >&2; exit 2; }
[ -x "$PTXAS" ] || { echo "gpu-sweep: no ptxas at $PTXAS (set PTXAS)" >&2; exit 2; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
VARIANTS=(
  "--gpu-arch=sm_80"
  "--gpu-arch=sm_80 --gpu-precision=bf16"
  "--gpu-arch=sm_90a --gpu-precision=bf16 --kv-dtype=bf16"
  "--gpu-arch=sm_90a --gpu-precision=bf16 --kv-dtype=bf16 --gpu-warp-specialized"
  "--gpu-arch=sm_90 --gpu-precision=bf16 --gpu-linear-chunked"
)
bad=0 runs=0 kernels=0 refused=0
for cfg in "$ROOT"/test/Frontend/Inputs/*.json "$ROOT"/../shared/configs/*.json; do
  [ -f "$cfg" ] || continue
  name=$(basename "$cfg" .json)
  for flags in "${VARIANTS[@]}"; do
    runs=$((runs + 1))
    arch=$(echo "$flags" | grep -o 'sm_[0-9a]*')
    ptx="$WORK/$name.ptx"
    # shellcheck disable=SC2086
    "$COMPILE" "$cfg" --target=cuda $flags --entries=sdpa,paged \
      --compile-to=ptx -o "$ptx" > "$WORK/log" 2>&1
    rc=$?
    if [ $rc -ge 128 ]; then
      echo "CRASH rc=$rc $name [$flags]"; bad=1; continue
    elif [ $rc -ne 0 ]; then
      refused=$((refused + 1))
      echo "refused $name [$flags]: $(head -c 160 "$WORK/log" | tr '\n' ' ')"
      continue
    fi
    # One PTX module per gpu.binary: ptxas assembles each.
    rm -f "$WORK"/part*.ptx
    awk -v p="$WORK/part" '/^\/\/ gpu.binary/ {n++} {print > (p n ".ptx")}' "$ptx"
    for part in "$WORK"/part*.ptx; do
      grep -q '\.entry' "$part" || continue
      kernels=$((kernels + 1))
      if ! "$PTXAS" -arch="$arch" -v "$part" -o /dev/null > "$WORK/ptxas" 2>&1; then
        echo "PTXAS-FAIL $name [$flags]: $(grep -m1 -i error "$WORK/ptxas")"; bad=1
      elif grep -q '[1-9][0-9]* bytes spill' "$WORK/ptxas"; then
        echo "SPILL $name [$flags]: $(grep -B3 '[1-9][0-9]* bytes spill' "$WORK/ptxas" | grep -m1 entry)"
        bad=1
      fi
    done
  done
done
echo "gpu-sweep: $runs compiles, $kernels kernels through ptxas, $refused refused, $([ $bad = 0 ] && echo 'no crash, ptxas failure or spill' || echo 'FINDINGS above')"
exit $bad
