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

same=0
differ=0
compare() { # name, then attn-compile arguments
  local name="$1"
  shift
  "$A/bin/attn-compile" "$@" -o "$TMP/a" >"$TMP/a.err" 2>&1
  local ra=$?
  "$B/bin/attn-compile" "$@" -o "$TMP/b" >"$TMP/b.err" 2>&1
  local rb=$?
  if [ "$ra" = "$rb" ] && cmp -s "$TMP/a.err" "$TMP/b.err" &&
     { [ ! -e "$TMP/a" ] && [ ! -e "$TMP/b" ] || cmp -s "$TMP/a" "$TMP/b"; }; then
    same=$((same + 1))
  else
    differ=$((differ + 1))
    echo "DIFFERS: $name (exit $ra vs $rb)"
    diff "$TMP/a" "$TMP/b" 2>/dev/null | head -5
  fi
  rm -f "$TMP/a" "$TMP/b"
}

for cfg in "$ROOT"/test/Frontend/Inputs/*.json "$ROOT"/test/Integration/Inputs/*.json \
           "$ROOT"/examples/*.json; do
  base="$(basename "$cfg")"
  for stage in fused tiled linalg llvm-dialect; do
    compare "$base --compile-to=$stage" "$cfg" --compile-to=$stage
  done
  compare "$base --target=cuda --compile-to=gpu" "$cfg" --target=cuda --compile-to=gpu
done
echo "host compiler: $same identical, $differ different"
[ "$differ" -eq 0 ]
