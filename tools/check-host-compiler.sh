#!/usr/bin/env bash
# The IR attn-compile generates must not depend on the C++ compiler that
# built it (an op created inside the argument list of another call is created
# in an unspecified order). Compiles every config of the test suite to each
# stage with two builds of the tools (tools/dev.sh: clang in build/, g++ in
# build-gcc/) and requires identical output, error messages included.
#
#   tools/check-host-compiler.sh BUILD_A BUILD_B
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
A="${1:?usage: check-host-compiler.sh BUILD_A BUILD_B}"
B="${2:?usage: check-host-compiler.sh BUILD_A BUILD_B}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

JOBS="${JOBS:-2}"

# One shard of the comparisons (every JOBS-th config from `shard` on), in
# its own directory; counts to $dir/count, differences to $dir/log.
run_shard() {
  local shard="$1" dir="$TMP/$1" i=0 same=0 differ=0
  mkdir -p "$dir"
  compare() { # name, then attn-compile arguments
    local name="$1"
    shift
    "$A/bin/attn-compile" "$@" -o "$dir/a" >"$dir/a.err" 2>&1
    local ra=$?
    "$B/bin/attn-compile" "$@" -o "$dir/b" >"$dir/b.err" 2>&1
    local rb=$?
    if [ "$ra" = "$rb" ] && cmp -s "$dir/a.err" "$dir/b.err" &&
       { [ ! -e "$dir/a" ] && [ ! -e "$dir/b" ] || cmp -s "$dir/a" "$dir/b"; }; then
      same=$((same + 1))
    else
      differ=$((differ + 1))
      echo "DIFFERS: $name (exit $ra vs $rb)"
      diff "$dir/a" "$dir/b" 2>/dev/null | head -5
    fi
    rm -f "$dir/a" "$dir/b"
  }
  for cfg in "$ROOT"/test/Frontend/Inputs/*.json "$ROOT"/test/Integration/Inputs/*.json \
             "$ROOT"/examples/*.json; do
    i=$((i + 1))
    [ $((i % JOBS)) -eq "$shard" ] || continue
    base="$(basename "$cfg")"
    for stage in fused tiled linalg llvm-dialect; do
      compare "$base --compile-to=$stage" "$cfg" --compile-to=$stage
    done
    compare "$base --target=cuda --compile-to=gpu" "$cfg" --target=cuda --compile-to=gpu
    # The grouped decode and the prefill on AMX tiles (a bf16 cache, groups
    # of 8 to 16), and the prefill of an f32 cache in three bf16 parts.
    case "$base" in
      *-g8-*|*-g16-*)
        compare "$base --kv-dtype=bf16 --cpu=sapphirerapids --compile-to=llvm-dialect" \
          "$cfg" --kv-dtype=bf16 --cpu=sapphirerapids --compile-to=llvm-dialect
        compare "$base --amx-f32-prefill --cpu=sapphirerapids --compile-to=llvm-dialect" \
          "$cfg" --amx-f32-prefill --cpu=sapphirerapids --compile-to=llvm-dialect ;;
    esac
    # The tensor-core kernel on a bf16 cache (cp.async, ldmatrix, mma.sync).
    compare "$base --target=cuda --gpu-precision=bf16 --kv-dtype=bf16 --compile-to=gpu" \
      "$cfg" --target=cuda --gpu-precision=bf16 --kv-dtype=bf16 --compile-to=gpu
  done >"$dir/log"
  echo "$same $differ" >"$dir/count"
}

# The configs in JOBS shards at once (each compare runs two processes one
# after the other).
for ((k = 0; k < JOBS; k++)); do
  run_shard "$k" &
done
wait
same=0
differ=0
for ((k = 0; k < JOBS; k++)); do
  cat "$TMP/$k/log"
  read -r s d <"$TMP/$k/count" || { s=0; d=1; echo "shard $k did not finish"; }
  same=$((same + s))
  differ=$((differ + d))
done
echo "host compiler: $same identical, $differ different"
[ "$differ" -eq 0 ]
