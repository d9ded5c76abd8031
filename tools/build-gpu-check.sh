#!/usr/bin/env bash
# Builds, on this machine, the CUDA executables that tools/gpu-check.sh runs on
# a GPU machine. Usage: tools/build-gpu-check.sh OUT_DIR [sm_90|sm_80]
# (needs a build of attn-compile: tools/dev.sh build). Also writes
# OUT_DIR.tar.gz, what a device call carries (OUT_DIR=gpuout in the checkout:
# ignored by git).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
OUT="${1:?usage: tools/build-gpu-check.sh OUT_DIR [sm_90|sm_80]}"
ARCH="${2:-sm_90}"
mkdir -p "$OUT"
INPUTS="$ROOT/test/Frontend/Inputs"
# Each config exercises a different kernel: GQA (Llama-3-8B: Hq=32 Hkv=8
# D=128), the seed model (Hq=64 Hkv=4 D=256), MQA (Falcon: 71 heads on 1),
# softcap + sliding window (Gemma-2), D=96 + window (Phi-3), bidirectional and
# cross attention (Whisper), D=64 bidirectional (BERT); the seed model and
# a small Qwen3-Next config (d_k 40, d_v 24) also carry Gated DeltaNet
# (linear attention) kinds; DeepSeek-V3's multi-head latent attention in its
# expanded form (D=192 Dv=128, 128 heads) and its absorbed form (every head
# over one 576-wide latent row, V its first 512 columns; contiguous and
# paged);
# Kimi-Linear (Kimi Delta Attention's per-channel decay, 32 heads of 128,
# and NoPE latent layers), a Granite-4.0-H-shaped hybrid (Mamba2's SSD:
# the rule without the delta correction, n_groups 2) and Nemotron-3-Nano
# (Mamba2 with 64 heads over 8 groups, d_state 128; NoPE GQA 32/2).
declare -A CONFIGS=(
  [llama-3.1-8b]="$INPUTS/llama-3.1-8b.json"
  [seed]="$ROOT/examples/seed-qwen3.8-max.json"
  [falcon-7b]="$INPUTS/falcon-7b.json"
  [gemma-2-27b]="$INPUTS/gemma-2-27b.json"
  [phi-3-mini]="$INPUTS/phi-3-mini-4k-instruct.json"
  [whisper-tiny]="$INPUTS/whisper-tiny.json"
  [bert-base]="$INPUTS/bert-base-uncased.json"
  [qwen3-next-gdn-d40]="$ROOT/test/Integration/Inputs/qwen3-next-gdn-r2-d40.json"
  [deepseek-v3]="$INPUTS/deepseek-v3.json"
  [kimi-linear]="$INPUTS/kimi-linear-48b-a3b.json"
  [granite-hybrid]="$ROOT/test/Integration/Inputs/granite-hybrid-small.json"
  [nemotron-3-nano]="$INPUTS/nemotron-3-nano-30b-a3b.json"
)
# Llama, Gemma-2 (softcap, window) and Falcon (MQA) also carry the paged
# kernels (--entries=paged), which their `check` runs over shuffled block
# tables.
for name in "${!CONFIGS[@]}"; do
  entries=sdpa
  case "$name" in llama-3.1-8b|gemma-2-27b|falcon-7b|deepseek-v3) entries=sdpa,paged ;; esac
  "$BUILD_DIR/bin/attn-compile" "${CONFIGS[$name]}" --target=cuda \
    --gpu-arch="$ARCH" --entries=$entries -o "$OUT/$name"
done
# The bf16 tensor-core kernels (mma.sync) of the two bench shapes and of
# Gemma-2 (softcap, window) and Falcon (MQA).
for name in llama-3.1-8b seed gemma-2-27b falcon-7b deepseek-v3; do
  "$BUILD_DIR/bin/attn-compile" "${CONFIGS[$name]}" --target=cuda \
    --gpu-arch="$ARCH" --gpu-precision=bf16 -o "$OUT/$name-bf16"
done
# bf16 and f16 KV caches (--kv-dtype), read as they are stored, contiguous
# and paged: the fp32 kernel widening them (Llama: GQA, D=128; Falcon: MQA,
# D=64) and the tensor-core kernel of the cache's own type (the seed: D=256,
# Q in shared memory; Llama f16: the f16 mma.sync variant).
"$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama-3.1-8b]}" --target=cuda \
  --gpu-arch="$ARCH" --kv-dtype=bf16 --entries=paged -o "$OUT/llama-3.1-8b-kvbf16"
"$BUILD_DIR/bin/attn-compile" "${CONFIGS[falcon-7b]}" --target=cuda \
  --gpu-arch="$ARCH" --kv-dtype=f16 --entries=paged -o "$OUT/falcon-7b-kvf16"
"$BUILD_DIR/bin/attn-compile" "${CONFIGS[seed]}" --target=cuda \
  --gpu-arch="$ARCH" --kv-dtype=bf16 --gpu-precision=bf16 \
  --entries=sdpa,paged -o "$OUT/seed-kvbf16-bf16"
# The chunked gated-delta kernel on tensor cores (--gpu-linear-chunked, off
# by default until this check passes): the seed's Gated DeltaNet layers
# (checked and benched next to seed-bf16's recurrent kernel), Mamba2's SSD
# in Nemotron-3-Nano (d_state 128, head dim 64), two small Qwen3-Next
# shapes: d_k 128 with d_v 48 (a 48-column block), d_k 64 with 4 value
# heads on one key head, and Kimi-Linear's KDA layers (a per-channel gate,
# 32 heads of 128).
CONFIGS[qwen3-next-gdn-r1]="$ROOT/test/Integration/Inputs/qwen3-next-gdn-r1.json"
CONFIGS[qwen3-next-gdn-r4]="$ROOT/test/Integration/Inputs/qwen3-next-gdn-r4.json"
for name in seed nemotron-3-nano qwen3-next-gdn-r1 qwen3-next-gdn-r4 \
  kimi-linear; do
  "$BUILD_DIR/bin/attn-compile" "${CONFIGS[$name]}" --target=cuda \
    --gpu-arch="$ARCH" --gpu-precision=bf16 --gpu-linear-chunked \
    -o "$OUT/$name-bf16-chunked"
done
# Llama 4's chunked local attention (chunks of 40 tokens at test size, so
# that check's shapes cross chunk boundaries; every 4th layer NoPE): the
# fp32 kernel, the bf16 mma.sync kernel, paged too.
CONFIGS[llama4-chunk40]="$ROOT/test/Integration/Inputs/llama4-chunk40.json"
"$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama4-chunk40]}" --target=cuda \
  --gpu-arch="$ARCH" --entries=sdpa,paged -o "$OUT/llama4-chunk40"
"$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama4-chunk40]}" --target=cuda \
  --gpu-arch="$ARCH" --kv-dtype=bf16 --gpu-precision=bf16 \
  --entries=sdpa,paged -o "$OUT/llama4-chunk40-kvbf16-bf16"
# MLA's absorbed decode on the bf16 tensor-core kernel over a bf16 latent
# cache, contiguous and paged (benched at DeepSeek-V3's decode shapes).
"$BUILD_DIR/bin/attn-compile" "${CONFIGS[deepseek-v3]}" --target=cuda \
  --gpu-arch="$ARCH" --kv-dtype=bf16 --gpu-precision=bf16 \
  --entries=sdpa,paged -o "$OUT/deepseek-v3-kvbf16-bf16"
# The tensor-core kernel on a bf16 cache as FlashAttention runs it (K/V
# tiles by cp.async): the Llama-3-8B bench shape, contiguous and paged.
"$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama-3.1-8b]}" --target=cuda \
  --gpu-arch="$ARCH" --kv-dtype=bf16 --gpu-precision=bf16 \
  --entries=sdpa,paged -o "$OUT/llama-3.1-8b-kvbf16-bf16"
"$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama-3.1-8b]}" --target=cuda \
  --gpu-arch="$ARCH" --kv-dtype=f16 --gpu-precision=f16 \
  --entries=paged -o "$OUT/llama-3.1-8b-kvf16-f16"
# Other tile shapes of the same kernel (gpu-check.sh benches them next to
# the defaults): 64 rows per block (--q-block), 32 rows per warp with
# 32-key tiles, 64-key tiles for head dim 256.
build_variant() {
  cfg=$1; name=$2; shift 2
  "$BUILD_DIR/bin/attn-compile" "$cfg" --target=cuda --gpu-arch="$ARCH" \
    --kv-dtype=bf16 --gpu-precision=bf16 "$@" -o "$OUT/$name"
}
build_variant "${CONFIGS[llama-3.1-8b]}" llama-3.1-8b-kvbf16-bf16-q16 --q-block=16
build_variant "${CONFIGS[llama-3.1-8b]}" llama-3.1-8b-kvbf16-bf16-w32k32 \
  --gpu-warp-rows=32 --kv-block=32
build_variant "${CONFIGS[seed]}" seed-kvbf16-bf16-q4 --q-block=4
# q and the output in bf16 too (--qo-dtype=bf16, as torch's SDPA takes
# them): checked, and benched next to the fp32-q build; the fp32 kernel's
# form checked.
build_variant "${CONFIGS[llama-3.1-8b]}" llama-3.1-8b-kvbf16-bf16-io16 \
  --qo-dtype=bf16 --entries=sdpa,paged
"$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama-3.1-8b]}" --target=cuda \
  --gpu-arch="$ARCH" --kv-dtype=bf16 --qo-dtype=bf16 --entries=sdpa,paged \
  -o "$OUT/llama-3.1-8b-kvbf16-io16"
if [ "$ARCH" = sm_90 ]; then
  build_variant "${CONFIGS[seed]}" seed-kvbf16-bf16-q4k64 --q-block=4 --kv-block=64
  build_variant "${CONFIGS[seed]}" seed-kvbf16-bf16-k64 --kv-block=64
fi
# sm_90a: the same tensor-core kernels with wgmma products (*-wgmma, benched
# next to the mma.sync ones by gpu-check.sh's *-kvbf16-bf16-* loop): the two
# bench shapes contiguous and paged, Gemma-2 (softcap, window), DeepSeek-V3's
# expanded MLA (D=192, Dv=128) and the f16 variant.
if [ "$ARCH" = sm_90 ]; then
  for name in llama-3.1-8b seed gemma-2-27b deepseek-v3; do
    "$BUILD_DIR/bin/attn-compile" "${CONFIGS[$name]}" --target=cuda \
      --gpu-arch=sm_90a --kv-dtype=bf16 --gpu-precision=bf16 \
      --entries=sdpa,paged -o "$OUT/$name-kvbf16-bf16-wgmma"
  done
  "$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama-3.1-8b]}" --target=cuda \
    --gpu-arch=sm_90a --kv-dtype=f16 --gpu-precision=f16 \
    --entries=sdpa,paged -o "$OUT/llama-3.1-8b-kvf16-f16-wgmma"
  "$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama-3.1-8b]}" --target=cuda \
    --gpu-arch=sm_90a --kv-dtype=bf16 --gpu-precision=bf16 --qo-dtype=bf16 \
    --entries=sdpa,paged -o "$OUT/llama-3.1-8b-kvbf16-bf16-wgmma-io16"
  # Diagnostics (checked, not benched): only S = Q·Kᵀ, only P·V, or neither
  # as wgmma on the same swizzled tiles; which of these pass tells a wrong
  # K-major or N-major descriptor from a wrong tile layout or fence.
  for pr in qk pv none; do
    "$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama-3.1-8b]}" --target=cuda \
      --gpu-arch=sm_90a --kv-dtype=bf16 --gpu-precision=bf16 \
      --gpu-wgmma-products=$pr -o "$OUT/llama-3.1-8b-wgmma-only-$pr"
  done
  # The contiguous wgmma kernels load K/V by TMA; this one by cp.async
  # (checked and benched: TMA's gain, or a TMA fault, in the same run).
  "$BUILD_DIR/bin/attn-compile" "${CONFIGS[llama-3.1-8b]}" --target=cuda \
    --gpu-arch=sm_90a --kv-dtype=bf16 --gpu-precision=bf16 --gpu-tma=false \
    -o "$OUT/llama-3.1-8b-kvbf16-bf16-wgmma-cpasync"
  # Each tile's softmax overlapped with the previous tile's P·V
  # (--gpu-overlap, value head dims up to 128): checked and benched next to
  # the plain loop.
  for name in llama-3.1-8b deepseek-v3; do
    "$BUILD_DIR/bin/attn-compile" "${CONFIGS[$name]}" --target=cuda \
      --gpu-arch=sm_90a --kv-dtype=bf16 --gpu-precision=bf16 --gpu-overlap \
      --entries=sdpa,paged -o "$OUT/$name-kvbf16-bf16-wgmma-overlap"
    # The overlapped kernel warp-specialized (--gpu-warp-specialized): a
    # producer warpgroup's TMA loads, two consumer warpgroups on 240
    # registers (setmaxnreg); checked and benched next to the two above.
    "$BUILD_DIR/bin/attn-compile" "${CONFIGS[$name]}" --target=cuda \
      --gpu-arch=sm_90a --kv-dtype=bf16 --gpu-precision=bf16 \
      --gpu-warp-specialized --entries=sdpa,paged \
      -o "$OUT/$name-kvbf16-bf16-wgmma-ws"
  done
fi
cp "$ROOT/tools/gpu-check.sh" "$ROOT/tools/gpu-baseline.py" \
  "$ROOT/test/Integration/Inputs/sdpa_ref.py" "$OUT/"
echo "built $(ls "$OUT" | grep -Evc '\.(sh|py)$') CUDA executables for $ARCH in $OUT;"
echo "on the GPU machine: $OUT/gpu-check.sh $OUT"
# The executables are ~100 MB, past what a device call carries (64 MiB):
# one compressed archive (~30 MB) travels instead.
tar czf "$OUT.tar.gz" -C "$OUT" .
echo "or carry $OUT.tar.gz ($(du -h "$OUT.tar.gz" | cut -f1)) and run there:"
echo "  mkdir -p /tmp/gc && tar xzf $(basename "$OUT").tar.gz -C /tmp/gc && sh /tmp/gc/gpu-check.sh /tmp/gc"
