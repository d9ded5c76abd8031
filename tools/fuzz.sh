#!/usr/bin/env bash
# Builds the libFuzzer targets (build-asan/, the sanitizer build of
# tools/dev.sh asan-test: clang-22, ASan + UBSan +
# libFuzzer instrumentation) and runs each for SECONDS (default 60) from seed
# corpora made of the test suite's inputs, JOBS (default 2) targets at once,
# then prints, per target, the executions, the coverage reached and the
# crashes found. Exit 1 on a crash.
#
#   tools/fuzz.sh [SECONDS]
#
# Targets: attn-fuzz-config (bytes -> normalize, describe, emit IR, verify),
# attn-fuzz-ir (MLIR text -> parse, verify, print, parse), attn-fuzz-npy
# (.npy read/write round trip), attn-fuzz-safetensors (open, read every
# tensor), attn-fuzz-capi (sequences of C API calls with fuzzed shapes,
# strides, dtypes, NULLs, lengths and aliasing on a Qwen3-Next library this
# script compiles with the sanitizer build's attn-compile); then
# tools/fuzz/python_args.py (random arguments through the Python module). Corpora grow in build-asan/corpus/<target>; crash reproducers go
# to build-asan/crashes/<target>.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_EACH="${1:-60}"
B="${FUZZ_BUILD_DIR:-$ROOT/build-asan}"

TARGETS=(attn-fuzz-config attn-fuzz-ir attn-fuzz-npy attn-fuzz-safetensors
         attn-fuzz-capi)
ASAN_BUILD_DIR="$B" "$ROOT/tools/dev.sh" asan-build "${TARGETS[@]}" \
  attn-compile
# The C API target's library: a Gated DeltaNet kind and a softmax kind with
# paged kernels, compiled (and instrumented) by the sanitizer build.
mkdir -p "$B/fuzz-capi"
"$B/bin/attn-compile" "$ROOT/test/Integration/Inputs/qwen3-next-gdn-r2-d40.json" \
  --entries=paged --emit=shared -o "$B/fuzz-capi/libq.so"
export ATTN_FUZZ_CAPI_LIB="$B/fuzz-capi/libq.so"

# Seed corpora from the test suite (copied once; the fuzzer adds to them).
seed() {
  local t="$1"; shift
  local d="$B/corpus/$t"
  [ -d "$d" ] && return 0
  mkdir -p "$d"
  "$@" "$d"
}
seed attn-fuzz-config bash -c 'cp "$0"/test/Frontend/Inputs/*.json "$0"/test/Integration/Inputs/*.json "$0"/examples/*.json "$1"/' "$ROOT"
seed attn-fuzz-ir bash -c 'for f in $(find "$0"/test -name "*.mlir"); do cp "$f" "$1/$(echo "$f" | tr / _)"; done' "$ROOT"
seed attn-fuzz-npy /usr/bin/python3 -c '
import sys, numpy as np
d = sys.argv[1]
np.save(d + "/a.npy", np.arange(24, dtype=np.float32).reshape(2, 3, 4))
np.save(d + "/b.npy", np.zeros((1, 4, 3, 40), np.float32))
np.save(d + "/c.npy", np.array([3, 5], np.int64))
np.save(d + "/s.npy", np.float32(1.5))'
seed attn-fuzz-capi true
seed attn-fuzz-safetensors /usr/bin/python3 -c '
import sys, json, numpy as np
d = sys.argv[1]
t = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(4, np.float32)}
h, blobs, off = {}, [], 0
for n, a in t.items():
    b = a.tobytes(); h[n] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
    blobs.append(b); off += len(b)
h["c"] = {"dtype": "BF16", "shape": [2], "data_offsets": [off, off + 4]}; blobs.append(b"\x80\x3f\x00\x40")
hb = json.dumps(h).encode()
open(d + "/w.safetensors", "wb").write(len(hb).to_bytes(8, "little") + hb + b"".join(blobs))'

# LLVM/MLIR come from Debian's packages, not built with ASan: their
# allocators' poisoning calls (compiled into our instrumented code through
# the headers) do not match the uninstrumented library; turn manual
# poisoning off, keep every other check.
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# Reproducers of past findings (tools/fuzz/seeds/<target>) join every run.
for t in "${TARGETS[@]}"; do
  if [ -d "$ROOT/tools/fuzz/seeds/$t" ]; then
    cp -n "$ROOT/tools/fuzz/seeds/$t"/* "$B/corpus/$t/" 2>/dev/null || true
  fi
done
# Each target for SECONDS_EACH, JOBS (default 2, the cores) at a time;
# the table and any failure in the targets' order once all have ended.
JOBS="${JOBS:-2}"
run_target() {
  local t="$1" crashes="$B/crashes/$1" dict=() rc=0
  mkdir -p "$crashes"
  [ "$t" = attn-fuzz-config ] && dict=(-dict="$ROOT/tools/fuzz/json.dict")
  touch "$B/.fuzz-start-$t" # crashes of this run: the files newer than it
  "$B/bin/$t" "$B/corpus/$t" "${dict[@]}" -max_total_time="$SECONDS_EACH" \
    -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$crashes/" >"$B/fuzz-$t.log" 2>&1 || rc=$?
  echo "$rc" >"$B/.fuzz-rc-$t"
}
running=0
for t in "${TARGETS[@]}"; do
  rm -f "$B/.fuzz-rc-$t"
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

status=0
printf "%-24s %12s %8s %8s\n" target executions coverage crashes
for t in "${TARGETS[@]}"; do
  crashes="$B/crashes/$t"
  log="$B/fuzz-$t.log"
  rc=$(cat "$B/.fuzz-rc-$t" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  n=$(find "$crashes" -type f -newer "$B/.fuzz-start-$t" | wc -l)
  printf "%-24s %12s %8s %8s\n" "$t" "${execs:-?}" "${cov:-?}" "$n"
  if [ "$rc" != 0 ] || [ "$n" -ne 0 ]; then
    status=1
    echo "fuzz: $t failed (exit $rc); see $log and $crashes" >&2
    grep -m5 -E "ERROR|SUMMARY|runtime error" "$log" >&2 || true
  fi
done
# The Python module's argument checks (tools/fuzz/python_args.py): random
# arguments for SECONDS on a library of the regular build (Python cannot
# load an ASan-instrumented one), when that build exists.
PLAIN="${PLAIN_BUILD_DIR:-$ROOT/build}"
if [ -x "$PLAIN/bin/attn-compile" ] && /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  mkdir -p "$B/fuzz-python"
  "$PLAIN/bin/attn-compile" "$ROOT/test/Integration/Inputs/qwen3-next-gdn-r2-d40.json" \
    --entries=paged --emit=shared -o "$B/fuzz-python/libq.so"
  if ! PYTHONPATH="$ROOT/runtime/python" /usr/bin/python3 \
      "$ROOT/tools/fuzz/python_args.py" "$B/fuzz-python/libq.so" \
      "$SECONDS_EACH" "${FUZZ_SEED:-$RANDOM}"; then
    echo "fuzz: python_args found a call that escaped the argument checks" >&2
    status=1
  fi
fi
exit "$status"
