#!/usr/bin/env bash
# The project's main job on the bundled default, called by `tools/dev.sh run`
# after the build. Argument: the build directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"
CONFIG="$ROOT/examples/seed-qwen3.8-max.json"
OUT="$BUILD_DIR/default"
mkdir -p "$OUT"

echo "== $CONFIG (the seed model: 92 layers, 64 query heads, 4 KV heads, head_dim 256)"
"$BUILD_DIR/bin/attn-compile" "$CONFIG" --describe -o "$OUT/describe.json"
python3 - "$OUT/describe.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"model_type {d['model_type']}, hidden {d['hidden_size']}, {d['num_layers']} layers, "
      f"max positions {d['max_position_embeddings']}")
for k in d["layer_kinds"]:
    line = f"  {k['name']:>18}: {k['count']} layers"
    if k.get("kv_cache_bytes_per_token"):
        f = k["attention_flops_per_token"]
        p = k["prefill_attention_flops"]
        line += (f", KV cache {k['kv_cache_bytes_per_token']['bf16']} B/token (bf16), "
                 f"decode FLOPs/token at 1k {f['1024']:.3e}, at max {f['max']:.3e}; "
                 f"prefill FLOPs at 262144 {p['262144']:.3e}, at max {p['max']:.3e}")
    else:
        st = k["state_bytes_per_sequence"]
        line += (f", Gated DeltaNet: state {st['bf16']} B/sequence (bf16, whatever the context), "
                 f"decode FLOPs/token {k['attention_flops_per_token']['1024']:.3e} at any context")
    print(line)
x = d["totals"].get("crossover")
if x:
    print(f"  crossover: past {x['decode_flops_context']} tokens of context a linear layer does "
          f"less decode work than a full-attention layer; past {x['state_vs_kv_cache_bytes_context']} "
          f"its state is smaller than that layer's KV cache")
PY
"$BUILD_DIR/bin/attn-compile" "$CONFIG" --compile-to=attn -o "$OUT/model.attn.mlir"
"$BUILD_DIR/bin/attn-opt" "$OUT/model.attn.mlir" -o /dev/null
echo "== --compile-to=attn: $OUT/model.attn.mlir ($(grep -c 'call @' "$OUT/model.attn.mlir") layer calls), verified by attn-opt"
echo "== the full-attention layer kind:"
sed -n '/func.func @full_attention/,/^  }/p' "$OUT/model.attn.mlir" | cut -c1-160

echo "== attn-compile -o $OUT/seed-model (native CPU): the executable of the model's attention kernels"
"$BUILD_DIR/bin/attn-compile" "$CONFIG" -o "$OUT/seed-model"
echo "== $OUT/seed-model check"
"$OUT/seed-model" check
echo "== $OUT/seed-model bench --seq 512 --repeats 3 (median ms; FLOPs 2*(D+Dv)*Hq per visible (query, key) pair, runtime/run/flops.h)"
"$OUT/seed-model" bench --seq 512 --repeats 3
