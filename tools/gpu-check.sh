#!/bin/sh
# The GPU checks, in one run, on a machine with an NVIDIA GPU and nothing
# installed (no compiler, no network): POSIX sh, awk, the driver.
# Usage: gpu-check.sh DIR   (DIR from tools/build-gpu-check.sh, which copies
# this script there too). Prints one summary; exit 0 when every check passes.
#   1. every executable's `check`: its kernels against a float64 CPU
#      reference on several shapes (decode, odd sizes, padding, GQA/MQA;
#      paged kernels over shuffled block tables, lengths 0, 1, P-1, P, P+1;
#      Gated DeltaNet kinds: S up to 1000, state in, extreme gates, split
#      prefill and decode); fp32 kernels within 1e-5, bf16 tensor-core ones
#      (*-bf16) within 2e-2;
#   2. `bench` on the seed model and a Llama-3-8B shape (Hq=32 Hkv=8 D=128),
#      fp32 and bf16 kernels, at S = 1k, 4k, 16k (batch 1, causal prefill):
#      median ms, TFLOP/s and % of the chip's fp32 and dense bf16 tensor
#      peaks; the seed's linear kind: ms and µs per token; the same shapes
#      and one decode step against 65,536 keys over bf16/f16 KV caches
#      (*-kv*: read as stored, widened by the fp32 kernel or taken by the
#      tensor-core kernel of the same type), contiguous and paged.
#   Checks of *-kv* executables compare with the reference on the rounded
#   K/V (1e-5 for the fp32 kernel, 2e-2 for the tensor-core ones).
set -u
# A hung kernel must not eat the whole lease: each run gets a time limit
# where coreutils' timeout exists.
if command -v timeout >/dev/null 2>&1; then LIMIT="timeout 240"; else LIMIT=""; fi
DIR="${1:?usage: gpu-check.sh DIR}"
# Logs go where we may write (DIR may be read-only): LOGDIR or a temp dir.
LOGDIR="${LOGDIR:-$(mktemp -d)}"
LOG="$LOGDIR/gpu-check.log"
: > "$LOG"
pass=0
failed=""
echo "== check (float64 reference)"
for exe in "$DIR"/*; do
  case "$exe" in *.sh|*.log) continue ;; esac
  [ -x "$exe" ] || continue
  name=$(basename "$exe")
  if $LIMIT "$exe" check > "$LOGDIR/$name.check.log" 2>&1; then
    pass=$((pass + 1))
    echo "ok    $name ($(grep -c '^ok' "$LOGDIR/$name.check.log") shapes)"
  else
    failed="$failed $name"
    echo "FAIL  $name (see $LOGDIR/$name.check.log):"
    grep -v '^ok' "$LOGDIR/$name.check.log" | tail -n 3 | sed 's/^/      /'
  fi
  cat "$LOGDIR/$name.check.log" >> "$LOG"
done
echo "== bench (batch 1, causal, median of 5)"
bench_lines=""
for name in llama-3.1-8b llama-3.1-8b-bf16 seed seed-bf16; do
  [ -x "$DIR/$name" ] || continue
  for s in 1024 4096 16384; do
    out=$($LIMIT "$DIR/$name" bench --seq $s --repeats 5 2>&1)
    echo "$out" >> "$LOG"
    echo "$out" | grep -v '^device:' | sed "s/^/$name S=$s: /"
    dev=$(echo "$out" | grep '^device:' | head -n 1)
  done
done
echo "== bf16/f16 KV caches (prefill S = 4k; decode: one query against 65,536 keys, contiguous and in pages of 16 and 256)"
for name in llama-3.1-8b-kvbf16 llama-3.1-8b-kvf16-f16 seed-kvbf16-bf16; do
  [ -x "$DIR/$name" ] || continue
  for shape in "--seq 4096" "--seq 1 --kv-len 65536" \
      "--seq 1 --kv-len 65536 --page-size 16" \
      "--seq 1 --kv-len 65536 --page-size 256"; do
    out=$($LIMIT "$DIR/$name" bench $shape --repeats 5 2>&1)
    echo "$out" >> "$LOG"
    echo "$out" | grep -v '^device:' | sed "s/^/$name $shape: /"
  done
done
echo "== summary"
[ -n "${dev:-}" ] && echo "$dev"
echo "check: $pass passed${failed:+, failed:$failed}; logs in $LOGDIR"
[ -z "$failed" ]
