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
#      (*-bf16) within 2e-2; the --qo-dtype executables (*-io16) also run
#      `sdpa` on bf16 files against sdpa_ref.py (python3 with numpy);
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
# GPU_CHECK_ONLY: an extended regex of the executables to check (default:
# all). GPU_BENCH: "full" (default: every bench below), "tc" (the
# tensor-core kernels on bf16 caches next to torch, and the decode step) or
# "none"; GPU_BENCH_ONLY: an extended regex of the executables to bench
# (default: all; e.g. 'wgmma|kvbf16-bf16$' for the sm_90a kernels next to
# the mma.sync ones). GPU_SANITIZE=0 skips compute-sanitizer, =all adds
# the linear and latent kernels to it.
ONLY="${GPU_CHECK_ONLY:-.}"
BENCH="${GPU_BENCH:-full}"
CSV="$LOGDIR/gpu-results.csv"
echo "name,args,ms,tflops,pct_bf16_peak" > "$CSV"
echo "== check (float64 reference)"
for exe in "$DIR"/*; do
  case "$exe" in *.sh|*.log|*.py) continue ;; esac
  [ -x "$exe" ] || continue
  name=$(basename "$exe")
  echo "$name" | grep -Eq "$ONLY" || continue
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
# --qo-dtype executables (*-io16): `sdpa` on bf16 .npy files (q, K, V and
# the output's bits) against a float64 NumPy reference (sdpa_ref.py, where
# python3 has numpy): causal prefill with rows that see no key, split-K
# decode against 3,000 keys; half a bf16 ulp for the fp32 kernel, the
# tensor-core bound for the others.
if [ -f "$DIR/sdpa_ref.py" ] && python3 -c "import numpy" 2>/dev/null; then
  for exe in "$DIR"/*-io16; do
    [ -x "$exe" ] || continue
    name=$(basename "$exe")
    echo "$name" | grep -Eq "$ONLY" || continue
    case "$name" in *-bf16-*) tol=2e-2 ;; *) tol=4.5e-3 ;; esac
    for shape in "--sq 130 --skv 100" "--sq 1 --skv 3000 --batch 2 --lens 2500,0"; do
      # shellcheck disable=SC2086
      if $LIMIT python3 "$DIR/sdpa_ref.py" "$exe" --kv-dtype bf16 \
          --qo-dtype bf16 --tol $tol --hq 32 --hkv 8 --d 128 --causal \
          $shape >> "$LOGDIR/$name.sdpa.log" 2>&1; then
        pass=$((pass + 1))
        echo "ok    $name sdpa $shape: $(tail -n 1 "$LOGDIR/$name.sdpa.log")"
      else
        failed="$failed $name:sdpa"
        echo "FAIL  $name sdpa $shape (see $LOGDIR/$name.sdpa.log):"
        tail -n 3 "$LOGDIR/$name.sdpa.log" | sed 's/^/      /'
      fi
    done
  done
fi
# compute-sanitizer's memcheck on the cp.async tensor-core kernel (where the
# machine has it: not under gVisor).
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
# The mma.sync kernel and, where built, the sm_90a wgmma one; with
# GPU_SANITIZE=all also the chunked Gated DeltaNet kernel (seed-bf16-chunked),
# MLA's absorbed kernels (deepseek-v3-kvbf16-bf16) and the warp-specialized
# wgmma kernel (llama-3.1-8b-kvbf16-bf16-wgmma-ws), whose producer and
# consumers also go through synccheck (barriers) and racecheck (shared
# memory hazards): their whole `check` under each tool, minutes each.
more=""
[ "${GPU_SANITIZE:-1}" = all ] && more="memcheck:seed-bf16-chunked memcheck:deepseek-v3-kvbf16-bf16 memcheck:llama-3.1-8b-kvbf16-bf16-wgmma-ws synccheck:llama-3.1-8b-kvbf16-bf16-wgmma-ws racecheck:llama-3.1-8b-kvbf16-bf16-wgmma-ws"
for run in memcheck:llama-3.1-8b-kvbf16-bf16 memcheck:llama-3.1-8b-kvbf16-bf16-wgmma $more; do
  tool=${run%%:*}; sname=${run#*:}
  [ "${GPU_SANITIZE:-1}" != 0 ] && [ -n "$san" ] && [ -x "$DIR/$sname" ] || continue
  echo "== compute-sanitizer $tool: $sname check"
  slog="$LOGDIR/$sname.$tool.log"
  if $LIMIT "$san" --tool "$tool" --error-exitcode 3 \
      "$DIR/$sname" check > "$slog" 2>&1; then
    echo "ok    $tool: $(tail -n 1 "$slog")"
  else
    failed="$failed $tool:$sname"
    echo "FAIL  $tool (see $slog):"
    grep -E 'ERROR|Invalid|error|hazard|Race' "$slog" | head -n 5 | sed 's/^/      /'
  fi
done
# One bench: prints its lines prefixed with the executable and arguments,
# and appends "name,args,ms,tflops,pct" to the CSV.
bench() {
  name=$1; shift
  [ -x "$DIR/$name" ] || return 0
  echo "$name" | grep -Eq "${GPU_BENCH_ONLY:-.}" || return 0
  out=$($LIMIT "$DIR/$name" bench "$@" 2>&1)
  echo "$out" >> "$LOG"
  echo "$out" | grep -v '^device:' | sed "s/^/$name $*: /"
  dev=$(echo "$out" | grep '^device:' | head -n 1)
  echo "$out" | awk -v n="$name" -v a="$*" '/fused|absorbed,/ {
    for (i = 1; i <= NF; i++) {
      if ($i == "ms" && ms == "") ms = $(i - 1);
      if ($i == "TFLOP/s," || ($i == "TFLOP/s" && $(i + 1) == "chunked")) tf = $(i - 1);
      if ($i == "GFLOP/s,") tf = $(i - 1) / 1000;
      if ($i == "dense") pct = $(i - 3);
    }
    sub("%", "", pct); print n "," a "," ms "," tf "," pct; ms = "" }' >> "$CSV"
}
if [ "$BENCH" = full ]; then
  echo "== bench (batch 1, causal, median of 5)"
  for name in llama-3.1-8b llama-3.1-8b-bf16 seed seed-bf16; do
    for s in 1024 4096 16384; do bench $name --seq $s --repeats 5; done
  done
  echo "== bf16/f16 KV caches (prefill S = 4k; decode: one query against 65,536 keys, contiguous and in pages of 16 and 256)"
  for name in llama-3.1-8b-kvbf16 llama-3.1-8b-kvf16-f16 seed-kvbf16-bf16; do
    bench $name --seq 4096 --repeats 5
    bench $name --seq 1 --kv-len 65536 --repeats 5
    bench $name --seq 1 --kv-len 65536 --page-size 16 --repeats 5
    bench $name --seq 1 --kv-len 65536 --page-size 256 --repeats 5
  done
fi
if [ "$BENCH" != none ]; then
echo "== tensor-core kernels on bf16 caches (batch 1, causal prefill, median of 10; *-q*/-k*: other q-block/kv-block)"
for name in llama-3.1-8b-kvbf16-bf16 seed-kvbf16-bf16; do
  for s in 1024 4096 16384; do bench $name --seq $s --repeats 10; done
  bench $name --seq 1 --kv-len 131072 --repeats 10
  bench $name --seq 1 --kv-len 131072 --page-size 64 --repeats 10
done
for exe in "$DIR"/*-kvbf16-bf16-*; do
  [ -x "$exe" ] || continue
  for s in 4096 16384; do bench "$(basename "$exe")" --seq $s --repeats 10; done
done
# The sm_90a kernels' decode step (TMA over a contiguous cache, cp.async
# through a block table).
for exe in "$DIR"/*-kvbf16-bf16-wgmma; do
  [ -x "$exe" ] || continue
  bench "$(basename "$exe")" --seq 1 --kv-len 131072 --repeats 10
  bench "$(basename "$exe")" --seq 1 --kv-len 131072 --page-size 64 --repeats 10
done
bench llama-3.1-8b-bf16 --seq 4096 --repeats 10
# DeepSeek-V3's absorbed MLA decode on the bf16 tensor-core kernel (every
# head over one 576-wide latent row, V its first 512 columns): batch 64
# at 4k cached tokens (compute-bound) and batch 1 at 64k (memory-bound,
# split-K), in pages of 64 and contiguous; the lines give % of the dense
# bf16 tensor peak and of the copy bandwidth.
echo "== linear decode (the seed's Gated DeltaNet layer, one token: the fp32 state read and written once; % of the copy bandwidth)"
for bsz in 1 16 64; do bench seed --layer 0 --seq 1 --batch $bsz --repeats 20; done
echo "== linear prefill (the seed's Gated DeltaNet layer, S = 4096: the recurrent fp32 kernel, then the chunked one on tensor cores)"
bench seed-bf16 --layer 0 --seq 4096 --repeats 5
bench seed-bf16-chunked --layer 0 --seq 4096 --repeats 10
bench seed-bf16-chunked --layer 0 --seq 4096 --batch 8 --repeats 5
echo "== KDA prefill (Kimi-Linear's first layer, S = 4096: recurrent fp32, then chunked on tensor cores)"
bench kimi-linear --layer 0 --seq 4096 --repeats 5
bench kimi-linear-bf16-chunked --layer 0 --seq 4096 --repeats 10
echo "== MLA absorbed decode (DeepSeek-V3, bf16 latent cache)"
bench deepseek-v3-kvbf16-bf16 --layer 0 --seq 1 --batch 64 --kv-len 4096 --page-size 64 --repeats 10
bench deepseek-v3-kvbf16-bf16 --layer 0 --seq 1 --batch 1 --kv-len 65536 --page-size 64 --repeats 10
bench deepseek-v3-kvbf16-bf16 --layer 0 --seq 1 --batch 64 --kv-len 4096 --repeats 10
# torch's scaled_dot_product_attention on the same shapes, same process
# kind (python3 with torch: the device image has it).
if [ -f "$DIR/gpu-baseline.py" ] && command -v python3 >/dev/null 2>&1; then
  echo "== torch baseline"
  $LIMIT python3 "$DIR/gpu-baseline.py" --dtypes bf16 --csv "$CSV" 2>&1 | tee -a "$LOG"
fi
fi
echo "== summary"
[ -n "${dev:-}" ] && echo "$dev"
# The same rows with the machine columns docs/bench-data/gpu-h200.csv takes
# (date, device, peak in GFLOP/s from the bench's device line).
if [ -n "${dev:-}" ]; then
  echo "$dev" | awk -v d="$(date +%F)" -v csv="$CSV" '{
    name = $2; for (i = 3; i <= NF && $i != "SMs"; i++) name = name " " $i;
    sub(/, [0-9]+$/, "", name);
    for (i = 1; i <= NF; i++) if ($i == "tensor" && $(i + 1) == "peak") peak = $(i + 2) * 1000;
    machine = d ",\"" name "\",1," peak ",";
    first = 1;
    while ((getline line < csv) > 0) {
      if (first) { print "date,cpu,threads,peak_gflops,bandwidth_gbs," line; first = 0 }
      else print machine "," line;
    }
  }' > "$LOGDIR/gpu-bench-data.csv"
  echo "results with the machine columns: $LOGDIR/gpu-bench-data.csv"
fi
echo "results: $CSV"
echo "check: $pass passed${failed:+, failed:$failed}; logs in $LOGDIR"
[ -z "$failed" ]
